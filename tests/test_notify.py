"""sd_notify against a real AF_UNIX datagram socket standing in for systemd's ``NOTIFY_SOCKET``
(systemd itself is not running here). The frozen inference loop is a real backend whose
``infer`` is made to block on demand: a hung model cannot be produced any other way."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from edge_hf.notify import Notifier, watchdog_interval
from edge_hf.runtime import RunConfig, Runtime
from edge_hf.sources import SourceOptions, open_source
from tests.conftest import EdgeHF, save_model
from tests.live import wait_until
from tests.test_runtime import ListSink


class FakeSystemd:
    """A bound datagram socket that records every notification, in order, one list per
    datagram. Lives in a short /tmp directory (AF_UNIX paths are limited to 107 bytes)."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="edgehf-sd-")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.1)
        self.received: list[list[str]] = []

    def drain(self) -> list[list[str]]:
        while True:
            try:
                self.received.append(self.sock.recv(4096).decode().split("\n"))
            except (TimeoutError, BlockingIOError):
                return self.received

    def fields(self) -> list[str]:
        return [f for dgram in self.drain() for f in dgram]

    def wait_for(self, field: str, count: int = 1, timeout: float = 30) -> bool:
        return wait_until(lambda: self.fields().count(field) >= count, timeout)

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def systemd():
    s = FakeSystemd()
    yield s
    s.close()


def test_ready_then_watchdog_pings_that_stop_when_inference_freezes(tmp_path: Path, systemd):
    opts = SourceOptions()  # paced at 25 fps, live: a camera
    cfg = RunConfig(cameras=("x",), model=save_model(tmp_path / "m.onnx"), source_opts=opts)
    stop = threading.Event()
    rt = Runtime(
        cfg,
        [ListSink()],
        stop,
        [open_source("synth://walk_left", opts)],
        notify=Notifier(systemd.path, watchdog=0.4),  # WATCHDOG_USEC=400000: pings every 0.2 s
    )
    frozen, thaw, real_infer = threading.Event(), threading.Event(), rt.backend.infer

    def infer(n=None) -> None:
        if frozen.is_set():
            thaw.wait(30)
        real_infer(n)

    rt.backend.infer = infer
    runner = threading.Thread(target=rt.run)
    runner.start()
    try:
        assert systemd.wait_for("READY=1")
        assert systemd.wait_for("WATCHDOG=1", 3)
        first_ping = systemd.fields().index("WATCHDOG=1")
        assert systemd.fields().index("READY=1") < first_ping

        frozen.set()
        assert wait_until(lambda: rt.watchdog.withheld >= 5, 20)  # 5 pings' worth of silence
        fields = systemd.fields()
        stuck = next(i for i, f in enumerate(fields) if f.startswith("STATUS=stuck: "))
        assert "inference" in fields[stuck]
        assert "WATCHDOG=1" not in fields[stuck:]  # silence after the stall was noticed

        frozen.clear()
        thaw.set()
        pings = rt.watchdog.pings
        assert wait_until(lambda: rt.watchdog.pings > pings, 10)  # the gate is live, not latched
    finally:
        thaw.set()
        stop.set()
        runner.join(10)
    assert systemd.fields()[-2:] == ["STOPPING=1", "STATUS=stopping"]


def test_the_cli_under_a_fake_systemd(tmp_path: Path, systemd):
    env = {"NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "1000000"}
    with EdgeHF(tmp_path, "run", "--camera", "synth://demo", env=env) as run:
        assert systemd.wait_for("READY=1", timeout=30), run.stderr()
        assert systemd.wait_for("WATCHDOG=1", 2, timeout=10)
        assert run.signal(signal.SIGTERM) == 0
    fields = systemd.fields()
    status = next(f for f in fields if f.startswith("STATUS=demo "))
    assert "fps" in status and "inference p95" in status
    assert fields.index("READY=1") < fields.index("WATCHDOG=1") < fields.index("STOPPING=1")


def test_abstract_socket_addresses_work(systemd):
    name = f"edgehf-{uuid.uuid4().hex[:8]}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind("\0" + name)
        s.settimeout(5)
        n = Notifier("@" + name)
        assert n.send("READY=1", "STATUS=hi")
        assert s.recv(100) == b"READY=1\nSTATUS=hi"
        n.close()


def test_a_vanished_socket_is_warned_about_once(caplog, tmp_path: Path):
    n = Notifier(str(tmp_path / "gone"))
    assert not n.send("WATCHDOG=1") and not n.send("WATCHDOG=1")
    assert len([r for r in caplog.records if "cannot notify systemd" in r.getMessage()]) == 1
    n.close()


@pytest.mark.parametrize(
    ("env", "expect"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "soon"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval_from_the_environment(env, expect):
    assert watchdog_interval(env) == expect


def test_no_notify_socket_no_notifier():
    assert Notifier.from_env({}) is None
