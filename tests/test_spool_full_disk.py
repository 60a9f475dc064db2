"""The spool on a full file system: a real 256 KiB tmpfs as the state directory, a real
``edge-hf run`` raising alerts while a real mosquitto is down, then back.

Needs root (``mount -t tmpfs``); skipped with the reason where mounting is not allowed.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from pathlib import Path

import pytest

from edge_hf.sinks.mqtt.spool import Spool
from tests.broker import Mosquitto, Subscriber, have_mosquitto
from tests.conftest import EdgeHF, mounted_tmpfs
from tests.live import wait_until

pytestmark = pytest.mark.skipif(not have_mosquitto(), reason="needs mosquitto (scripts/setup.sh)")

WAL_BOUND = 128 * 1024  # WAL_LIMIT (64 KiB) plus a transaction's worth of pages, and then some


@pytest.fixture
def tiny_fs(tmp_path: Path):
    """A 256 KiB tmpfs, already holding 96 KiB of someone else's data."""
    with mounted_tmpfs(tmp_path / "state") as mnt:
        (mnt / "filler").write_bytes(b"\0" * 96 * 1024)
        yield mnt


class WalWatch(threading.Thread):
    """Samples the size of the spool's WAL file every 20 ms; ``peak`` is the largest seen."""

    def __init__(self, state: Path) -> None:
        super().__init__(daemon=True)
        self.wal = state / (Spool.FILENAME + "-wal")
        self.peak = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.02):
            with contextlib.suppress(FileNotFoundError):
                self.peak = max(self.peak, self.wal.stat().st_size)


def edge_hf(tmp: Path, url: str, state: Path) -> EdgeHF:
    return EdgeHF(
        tmp,
        "run",
        "--camera",
        "synth://demo",
        "--fast",
        "--cooldown",
        "0",
        "--mqtt",
        url,
        "--state-dir",
        str(state),
        "--mqtt-reconnect-max",
        "1",
    )


def ids(events) -> list[str]:
    return [f"{e['id']}/{e['event']}" for e in events]


def test_a_full_disk_loses_nothing_duplicates_nothing_and_keeps_order(tmp_path, tiny_fs):
    watch = WalWatch(tiny_fs)
    watch.start()
    with Mosquitto(persistent=True) as broker, Subscriber(broker.port, client_id="disk") as sub:
        broker.stop()  # the subscriber's session and queue survive on the broker
        with edge_hf(tmp_path, broker.url, tiny_fs) as run:
            # alerts pile up until the file system is full and some wait in memory
            assert wait_until(lambda: "ERROR spool" in run.stderr(), 60), run.stderr()
            n0 = len(run.events())
            assert wait_until(lambda: len(run.events()) >= n0 + 6, 30)
            broker.start()
            got = lambda: ids(json.loads(p) for p in sub.payloads("edge-hf/events"))  # noqa: E731
            assert wait_until(lambda: set(ids(run.events())) <= set(got()), 30), run.stderr()
            assert run.signal(signal.SIGTERM) == 0
        raised = ids(run.events())
        # a second run on the same state directory must not send anything again
        with edge_hf(tmp_path, broker.url, tiny_fs) as run2:
            assert wait_until(lambda: len(run2.events()) >= 4, 30)
            assert run2.signal(signal.SIGTERM) == 0
        assert wait_until(lambda: set(ids(run2.events())) <= set(got()), 10)
        time.sleep(0.5)  # anything re-sent by run2 would have arrived by now
        first = [i for i in got() if i in set(raised)]
    watch.halt.set()
    watch.join(1)
    err = run.stderr()
    print(f"{len(raised)} alerts raised, WAL peak {watch.peak} bytes; stderr:\n{err[-1500:]}")
    assert first == raised  # nothing lost, nothing twice, in the order raised
    assert watch.peak <= WAL_BOUND
    assert err.count("ERROR spool") <= 4  # rate-limited: first, then at powers of ten
