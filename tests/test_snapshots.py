"""Snapshots: the store's bounds on real files, and ``edge-hf run --snapshots`` as a user runs
it: every alert start names a full-resolution JPEG that exists; with MQTT the small one arrives
retained on ``<prefix>/<camera>/<label>/snapshot`` before the event; with HTTP it is served."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from pathlib import Path

import cv2
import numpy as np
import pytest

from edge_hf.snapshots import SMALL_HEIGHT, SnapshotOptions, SnapshotStore
from tests.broker import Mosquitto, Subscriber, have_mosquitto
from tests.conftest import EdgeHF, run_cli
from tests.live import free_port, wait_until

SIZE = (540, 960)  # the camera below: full resolution, over the small height


def noise(h: int = 480, w: int = 640) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 255, (h, w, 3), np.uint8)  # big as a JPEG


def test_the_store_keeps_the_newest_within_count_and_bytes(tmp_path: Path):
    store = SnapshotStore(SnapshotOptions(tmp_path, max_count=3, max_bytes=10**9))
    names = [store.save("porch", "fall", str(uuid.uuid4()), time.time(), noise()).file
             for _ in range(5)]  # fmt: skip
    assert sorted(p.name for p in tmp_path.glob("*.jpg")) == sorted(names[2:])
    one = (tmp_path / names[-1]).stat().st_size
    again = SnapshotStore(SnapshotOptions(tmp_path, max_count=100, max_bytes=2 * one + 10))
    assert len(list(tmp_path.glob("*.jpg"))) == 2  # a restart with a smaller bound trims
    snap = again.save("porch", "fall", "abcdefgh-1", 0.0, noise(1080, 1920))
    assert snap.file == "porch-fall-19700101T000000-abcdefgh.jpg"
    small = cv2.imdecode(np.frombuffer(snap.small, np.uint8), cv2.IMREAD_COLOR)
    assert small.shape[0] == SMALL_HEIGHT and small.shape[1] == 480
    full = cv2.imread(str(tmp_path / snap.file))
    assert full.shape[:2] == (1080, 1920)
    assert [p.name for p in tmp_path.glob("*.jpg")] == [snap.file]  # alone over the bound: kept
    assert again.path("../etc/passwd") is None and again.path(snap.file) is not None


def test_a_snapshot_dir_that_cannot_be_made_is_one_line_and_exit_5(tmp_path: Path):
    (tmp_path / "file").write_text("x")
    r = run_cli("run", "--camera", "synth://demo?frames=60", "--fast", "--snapshots",
                "--snapshot-dir", str(tmp_path / "file" / "snaps"), timeout=60)  # fmt: skip
    assert r.returncode == 5, r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith(f"edge-hf: error: --snapshot-dir {tmp_path / 'file' / 'snaps'}: cannot use it")
    )


@pytest.mark.skipif(not have_mosquitto(), reason="needs mosquitto (scripts/setup.sh)")
def test_run_with_snapshots_mqtt_and_http(tmp_path: Path):
    port = free_port()
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        args = ("run", "--camera", "demo=synth://demo?size=960x540", "--fast", "--cooldown", "0", "--snapshots",
                "--state-dir", str(tmp_path / "state"), "--mqtt", broker.url, "--mqtt-discovery",
                "--http", str(port))  # fmt: skip
        with EdgeHF(tmp_path, *args) as run:
            starts = lambda: [e for e in run.events() if e["event"] == "start"]  # noqa: E731
            assert wait_until(lambda: len(starts()) >= 2, 60), run.stderr()
            first = starts()[0]
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}{first['snapshot']['url']}", timeout=5
            ) as r:
                served = r.read()
                assert r.headers["Content-Type"] == "image/jpeg"
            assert wait_until(lambda: first["id"] in str(sub.payloads("edge-hf/events")), 10)
            assert run.signal(15) == 0
    file = tmp_path / "state" / "snapshots" / first["snapshot"]["file"]
    assert served == file.read_bytes()
    assert cv2.imread(str(file)).shape[:2] == SIZE  # full resolution
    # the small JPEG arrives before the event that names it
    order = [m.topic for m in sub.messages() if m.topic in ("edge-hf/demo/fall/snapshot",
                                                             "edge-hf/events")]  # fmt: skip
    assert order[0] == "edge-hf/demo/fall/snapshot"
    (snap, *_) = sub.messages("edge-hf/demo/fall/snapshot")
    small = cv2.imdecode(np.frombuffer(snap.raw, np.uint8), cv2.IMREAD_COLOR)
    assert small.shape[0] <= SMALL_HEIGHT
    configs = [json.loads(m.payload) for m in sub.messages()
               if m.topic.startswith("homeassistant/image/") and m.payload]  # fmt: skip
    assert configs and configs[0]["image_topic"] == "edge-hf/demo/fall/snapshot"
