"""Snapshots: the store's bounds on real files, and ``edge-hf run --snapshots`` as a user runs
it: every alert start names a full-resolution JPEG that exists; with MQTT the small one arrives
retained on ``<prefix>/<camera>/<label>/snapshot`` before the event; with HTTP it is served."""

from __future__ import annotations

import errno
import json
import shutil
import threading
import time
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest

from edge_hf.runtime import RunConfig, Runtime
from edge_hf.snapshots import SMALL_HEIGHT, SnapshotOptions, SnapshotStore
from edge_hf.sources import SourceOptions
from edge_hf.spec import Scale
from tests.broker import Mosquitto, Subscriber, have_mosquitto
from tests.conftest import EdgeHF, mounted_tmpfs, run_cli
from tests.live import free_port, wait_until
from tests.motion_model import MOTION_SPEC, brightness_model
from tests.numbered import frame_number, write_numbered
from tests.test_runtime import ListSink
from tests.test_twostage import ACCEPT, confirming

SIZE = (540, 960)  # the camera below: full resolution, over the small height


def noise(h: int = 480, w: int = 640) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 255, (h, w, 3), np.uint8)  # big as a JPEG


def test_the_store_keeps_the_newest_within_count_and_bytes(tmp_path: Path):
    store = SnapshotStore(SnapshotOptions(tmp_path, max_count=3, max_bytes=10**9))
    names = [
        store.save("porch", "fall", str(uuid.uuid4()), time.time(), noise()).file for _ in range(5)
    ]
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


def test_on_a_full_disk_the_store_makes_room_or_leaves_everything_as_it_was(tmp_path: Path):
    """A real 256 KiB tmpfs mostly full of someone else's data: ours make room for the newest,
    no temporary file is ever left, and a snapshot that all of ours could not make room for
    leaves them be."""
    with mounted_tmpfs(tmp_path / "snaps", "256k") as snaps:
        theirs = snaps / "theirs"
        theirs.write_bytes(b"\0" * (shutil.disk_usage(snaps).free - 40 * 1024))
        store = SnapshotStore(SnapshotOptions(snaps))
        saved = [
            store.save("porch", "fall", uuid.uuid4().hex, time.time(), noise(96, 128)).file
            for _ in range(8)  # 12 KB each: three fit
        ]
        left = sorted(p.name for p in snaps.iterdir() if p != theirs)
        assert store.evicted == 8 - len(left) > 0 and left == sorted(saved[-len(left) :])
        with pytest.raises(OSError) as e:  # 55 KB: more than ours and the free space
            store.save("porch", "fall", uuid.uuid4().hex, time.time(), noise(200, 300))
        assert e.value.errno == errno.ENOSPC
        assert sorted(p.name for p in snaps.iterdir()) == sorted([*left, "theirs"])


def test_a_snapshot_dir_that_cannot_be_made_is_one_line_and_exit_5(tmp_path: Path):
    (tmp_path / "file").write_text("x")
    r = run_cli(
        "run",
        "--camera",
        "synth://demo?frames=60",
        "--fast",
        "--snapshots",
        "--snapshot-dir",
        str(tmp_path / "file" / "snaps"),
        timeout=60,
    )
    assert r.returncode == 5, r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith(f"edge-hf: error: --snapshot-dir {tmp_path / 'file' / 'snaps'}: cannot use it")
    )


def test_files_the_store_did_not_write_are_left_alone(tmp_path: Path):
    """Photos in --snapshot-dir (a user's, another program's) are never deleted, whatever the
    bounds; the store trims only its own files and says once that it ignores the others."""
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    photos = {
        f"IMG_000{i}.jpg": cv2.imencode(".jpg", noise(64, 64))[1].tobytes() for i in range(1, 6)
    }
    for name, data in photos.items():
        (snaps / name).write_bytes(data)
    r = run_cli(
        *("run", "--camera", "synth://demo?frames=700", "--fast", "--snapshots"),
        *("--snapshot-dir", str(snaps), "--snapshot-max-count", "1"),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    starts = [json.loads(x) for x in r.stdout.splitlines() if '"start"' in x]
    assert len(starts) == 2  # the demo story's two falls
    for name, data in photos.items():
        assert (snaps / name).read_bytes() == data, name
    assert sorted(p.name for p in snaps.iterdir()) == sorted(
        [*photos, starts[-1]["snapshot"]["file"]]
    )  # the first snapshot went, to keep max count 1 of its own
    said = [line for line in r.stderr.splitlines() if "did not write" in line]
    assert len(said) == 1 and "INFO" in said[0] and "5 file(s)" in said[0], r.stderr
    store = SnapshotStore(SnapshotOptions(snaps, max_count=1))
    assert store.path("IMG_0001.jpg") is None  # not served over HTTP either
    assert store.path(starts[-1]["snapshot"]["file"]) is not None


def test_a_full_snapshot_disk_evicts_the_oldest_and_every_alert_keeps_its_snapshot(tmp_path):
    """A real 256 KiB tmpfs as --snapshot-dir, nearly full of someone else's data, with a
    temporary file a crash left behind: the leftover is cleaned at start, and when the disk
    refuses a snapshot the oldest of ours make room for it; every alert goes out with one."""
    with mounted_tmpfs(tmp_path / "snaps", "256k") as snaps:
        filler = snaps / "filler"
        filler.write_bytes(b"\0" * (shutil.disk_usage(snaps).free - 48 * 1024))  # 4 snapshots
        theirs_size = filler.stat().st_size
        leftover = snaps / ".demo-fall-20260101T000000-0123abcd.jpg.tmp"  # killed mid-write
        leftover.write_bytes(b"\0" * 24 * 1024)
        theirs = snaps / ".theirs.tmp"  # not a name we write: left alone
        theirs.write_bytes(b"x")
        r = run_cli(
            *("run", "--camera", "synth://demo?frames=3612", "--fast", "--snapshots"),
            *("--snapshot-dir", str(snaps)),  # four times the story: eight falls
            timeout=180,
        )
        names = sorted(p.name for p in snaps.iterdir())
        filler_size = filler.stat().st_size
    assert r.returncode == 0, r.stderr
    events = [json.loads(x) for x in r.stdout.splitlines()]
    starts = [e for e in events if e["event"] == "start"]
    ends = [e for e in events if e["event"] == "end"]
    assert len(starts) >= 6 and len(ends) == len(starts), r.stderr
    assert all("snapshot" in e for e in starts), r.stderr  # none lost to the full disk
    assert "cannot write" not in r.stderr and "make room for new ones" in r.stderr, r.stderr
    ours = [n for n in names if n.endswith(".jpg")]
    assert starts[-1]["snapshot"]["file"] in ours and len(ours) < len(starts)  # evicted
    assert not any(n.endswith(".jpg.tmp") for n in names), names  # the leftover went
    assert ".theirs.tmp" in names and filler_size == theirs_size


@pytest.mark.skipif(not have_mosquitto(), reason="needs mosquitto (scripts/setup.sh)")
def test_run_with_snapshots_mqtt_and_http(tmp_path: Path):
    port = free_port()
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        args = (
            "run",
            "--camera",
            "demo=synth://demo?size=960x540",
            "--fast",
            "--cooldown",
            "0",
            "--snapshots",
            "--state-dir",
            str(tmp_path / "state"),
            "--mqtt",
            broker.url,
            "--mqtt-discovery",
            "--http",
            str(port),
        )
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
    order = [
        m.topic
        for m in sub.messages()
        if m.topic in ("edge-hf/demo/fall/snapshot", "edge-hf/events")
    ]
    assert order[0] == "edge-hf/demo/fall/snapshot"
    (snap, *_) = sub.messages("edge-hf/demo/fall/snapshot")
    small = cv2.imdecode(np.frombuffer(snap.raw, np.uint8), cv2.IMREAD_COLOR)
    assert small.shape[0] <= SMALL_HEIGHT
    configs = [
        json.loads(m.payload)
        for m in sub.messages()
        if m.topic.startswith("homeassistant/image/") and m.payload
    ]
    assert configs and configs[0]["image_topic"] == "edge-hf/demo/fall/snapshot"


# A numbered clip (tests/numbered.py): dark until frame 40, then bright. The brightness model
# alerts on a hyperframe (frames a-6, a-3, a) only when all three are bright: first at a = 46.
BRIGHT_FROM, FIRST_HIT = 40, 46


@pytest.fixture(scope="module")
def numbered(tmp_path_factory) -> Path:
    return write_numbered(tmp_path_factory.mktemp("clips") / "numbered.avi", 120, BRIGHT_FROM)


def run_numbered(tmp_path: Path, cameras, snapshots: bool = True, **kw) -> tuple[Runtime, list]:
    model = tmp_path / "bright.onnx"
    onnx.save(brightness_model(MOTION_SPEC, level=0.645), model)
    cfg = RunConfig(
        cameras=tuple(cameras),
        model=model,
        source_opts=SourceOptions(fast=True),
        snapshots=SnapshotOptions(tmp_path / "snaps") if snapshots else None,
        **kw,
    )
    sink = ListSink()
    rt = Runtime(cfg, [sink], threading.Event())
    assert rt.run() == 0
    return rt, [e for e in sink.events if e.kind == "start"]


@pytest.mark.parametrize(("every", "cameras"), [(1, 2), (4, 1)])
def test_the_snapshot_is_the_centre_frame_of_the_first_hyperframe(
    tmp_path, numbered, every, cameras
):
    names = [f"cam{c}={numbered}" for c in range(cameras)]
    rt, starts = run_numbered(tmp_path, names, every=every)  # k=2 of n=3
    assert len(starts) == cameras
    for ev in starts:
        # the second hit fired it, a hop after the first; the centre of (40, 43, 46) is 43
        assert (ev.first, ev.frame) == (FIRST_HIT, FIRST_HIT + every)
        full = cv2.imread(str(tmp_path / "snaps" / ev.snapshot))
        assert full.shape == (360, 640, 3)  # the source's resolution, not the model's
        assert frame_number(full) == FIRST_HIT - MOTION_SPEC.centre_lag == 43
        small = cv2.imdecode(np.frombuffer(ev.small, np.uint8), cv2.IMREAD_COLOR)
        assert frame_number(small) == 43
        # the same pixels as the file's frame 43, within JPEG's loss
        cap = cv2.VideoCapture(str(numbered))
        cap.set(cv2.CAP_PROP_POS_FRAMES, 43)
        ok, frame = cap.read()
        cap.release()
        assert ok and np.abs(full.astype(int) - frame).mean() < 3
    for cam in rt.cameras:  # the ring was big enough: no snapshot fell back to a newer frame
        keep = cam.capture.keep
        assert keep is not None and keep.late == 0
        assert len(keep.slots) == 3 + 2 + 3 // every


def test_without_snapshots_no_full_resolution_frame_is_kept(tmp_path, numbered):
    rt, starts = run_numbered(tmp_path, [str(numbered)], snapshots=False)
    assert len(starts) == 1 and starts[0].snapshot is None
    assert rt.cameras[0].capture.keep is None and not (tmp_path / "snaps").exists()


@pytest.mark.parametrize("error", [OSError(errno.EIO, "Input/output error"), ValueError("a bug")])
def test_an_alert_whose_snapshot_fails_goes_out_without_it(tmp_path, numbered, caplog, error):
    """Whatever breaks while a snapshot is made (a disk error, a bug in the store), the alert
    is emitted, without the snapshot, and the failure is said (a bug with its traceback)."""
    model = tmp_path / "bright.onnx"
    onnx.save(brightness_model(MOTION_SPEC, level=0.645), model)
    cfg = RunConfig(
        cameras=(str(numbered),),
        model=model,
        source_opts=SourceOptions(fast=True),
        snapshots=SnapshotOptions(tmp_path / "snaps"),
    )
    sink = ListSink()
    rt = Runtime(cfg, [sink], threading.Event())

    def broken(*args):
        raise error

    rt.snapshots.save = broken  # what cannot be made to fail for real (a bug)
    assert rt.run() == 0
    assert [(e.kind, e.snapshot) for e in sink.events] == [("start", None), ("end", None)]
    assert rt.snapshots.failures == 1
    (said,) = [r for r in caplog.records if r.name == "edge_hf.run" and "snapshots" in r.message]
    assert (said.exc_info is not None) == isinstance(error, ValueError)


def test_two_stage_snapshots_the_centre_of_the_confirming_models_hyperframe(tmp_path, numbered):
    # the confirming pyramid takes frames a-16, a-8, a-6, a-3, a: its centre is a-8
    pyramid = replace(MOTION_SPEC, scales=(Scale(3, 3), Scale(3, 8)), arch="constant")
    assert pyramid.centre_lag == 8
    rt, starts = run_numbered(tmp_path, [str(numbered)], confirm=confirming(tmp_path, ACCEPT))
    (ev,) = starts
    assert ev.first == FIRST_HIT and ev.screen is not None
    full = cv2.imread(str(tmp_path / "snaps" / ev.snapshot))
    assert full.shape == (360, 640, 3) and frame_number(full) == FIRST_HIT - 8
    assert rt.cameras[0].capture.keep.late == 0


def test_the_demo_models_snapshots_are_never_late(tmp_path: Path):
    """The shipped demo model waits for lying after a fall (its spec's alert_then), and its fall
    hits re-arm that wait for half a second: its start comes 14 hyperframes after the first hit.
    The frame is held from the arming on, so both falls of the story get their own centre frame."""
    from edge_hf import synth

    cfg = RunConfig(
        cameras=("synth://demo?frames=700",),
        source_opts=SourceOptions(fast=True),
        snapshots=SnapshotOptions(tmp_path / "snaps"),
    )
    sink = ListSink()
    rt = Runtime(cfg, [sink], threading.Event())
    assert rt.spec.alert_then and rt.spec.centre_lag == 1
    assert rt.run() == 0
    starts = [e for e in sink.events if e.kind == "start"]
    assert len(starts) == 2  # the story's two falls
    keep = rt.cameras[0].capture.keep
    assert keep.late == 0
    assert len(keep.slots) == 3 + 2 + 1 + 1  # n, the hand-off, the centre lag, one held frame
    scene, frame = synth.make_scene("demo", seed=0), np.zeros((360, 640, 3), np.uint8)
    for ev in starts:
        assert ev.frame - ev.first > 3 + 2 + 1  # more than a ring without the hold covers
        scene.render(ev.first - 1, frame)
        shot = cv2.imread(str(tmp_path / "snaps" / ev.snapshot))
        assert np.abs(shot.astype(int) - frame).mean() < 3  # that frame, within JPEG's loss


def test_an_alert_decided_too_late_gets_the_newest_frame_and_still_goes_out(tmp_path, numbered):
    """A frame loop that stalls (here: the model call, a second on the firing hyperframe) while a
    paced camera runs on: the centre frame is gone, the newest kept one is used, counted."""
    model = tmp_path / "bright.onnx"
    onnx.save(brightness_model(MOTION_SPEC, level=0.645), model)
    cfg = RunConfig(cameras=(str(numbered),), model=model, snapshots=SnapshotOptions(tmp_path))
    sink = ListSink()
    rt = Runtime(cfg, [sink], threading.Event())
    infer, hits = rt.backend.infer, []

    def stalling(n=None) -> None:
        infer(n)
        if rt.batcher.frames[0] >= FIRST_HIT:  # bright from here on: every hyperframe is a hit
            hits.append(rt.batcher.frames[0])
            if len(hits) == 2:  # the second hit fires (k=2); a busy CI may have dropped some
                time.sleep(1.0)  # 25 frames of a 25 fps file go by

    rt.backend.infer = stalling
    assert rt.run() == 0
    (ev,) = [e for e in sink.events if e.kind == "start"]
    assert len(hits) > 2 and (ev.first, ev.frame) == tuple(hits[:2])
    assert rt.cameras[0].capture.keep.late == 1 == rt.cameras[0].counters().snapshots_late
    shown = frame_number(cv2.imread(str(tmp_path / ev.snapshot)))
    assert shown >= hits[1] + 19  # a second later, not the centre of the firing hyperframe
