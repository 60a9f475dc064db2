"""The run loop in-process: allocation-free steady state, skipped decodes, freshness."""

from __future__ import annotations

import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from edge_hf.errors import UsageError
from edge_hf.motion import MotionOptions
from edge_hf.runtime import RunConfig, Runtime
from edge_hf.snapshots import SnapshotOptions
from edge_hf.sources import SourceOptions, open_source
from edge_hf.sources.file import FileSource
from tests.allocation import AllocationProbe
from tests.conftest import save_model
from tests.live import wait_until
from tests.live.hung import HungCameras
from tests.motion_model import MOTION_SPEC


class ListSink:
    def __init__(self) -> None:
        self.events = []
        self.closed = False

    def start(self, run) -> None:
        self.run = run

    def emit(self, event) -> None:
        self.events.append(event)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("every", "motion", "snapshots"),
    [(1, False, False), (5, False, False), (1, True, False), (1, False, True), (5, True, True)],
)
def test_steady_state_allocates_nothing_per_frame(tmp_path, every, motion, snapshots):
    model = save_model(tmp_path / "m.onnx")
    opts = SourceOptions(fast=True)
    probe = AllocationProbe(open_source("synth://walk_left?frames=1600", opts), (300, 900, 1500))
    cfg = RunConfig(
        cameras=("x",),
        model=model,
        every=every,
        source_opts=opts,
        motion=MotionOptions(enabled=motion),
        # every centre frame decoded into the full-resolution ring (edge_hf.fullres)
        snapshots=SnapshotOptions(tmp_path / "snaps") if snapshots else None,
    )
    tracemalloc.start(1)
    try:
        Runtime(cfg, [ListSink()], threading.Event(), sources=[probe]).run()
    finally:
        tracemalloc.stop()
    assert len(probe.snapshots) == 3, "the probe never reached its last frame"
    # After a warm-up interval, 600 frames must not grow the heap. One retained object per
    # frame would be >= 19 kB; the slack is objects in flight in the other thread.
    diff = probe.snapshots[2].compare_to(probe.snapshots[1], "lineno")
    assert sum(d.size_diff for d in diff) < 2048, "\n".join(str(d) for d in diff[:8])
    # A per-frame copy of a 640x360 frame or of a hyperframe would push the peak past 75 kB.
    # (With snapshots: the ring's slots are allocated in the warm-up, and decoded into.)
    # (`peak` is read at the last mark, since the reset after the previous snapshot.)
    assert probe.peak - probe.base < 32_000


class CountingFile(FileSource):
    """A real FileSource that records which frames were decoded."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.grabbed = -1
        self.decoded: list[int] = []

    def grab(self) -> bool:
        ok = super().grab()
        self.grabbed += ok
        return ok

    def retrieve(self, out=None):
        self.decoded.append(self.grabbed)
        return super().retrieve(out)


@pytest.mark.parametrize(
    ("every", "expect"), [(1, None), (4, [0, 3, 4, 6, 7, 8, 10, 11]), (6, [0, 3, 6, 9, 12, 15])]
)
def test_frames_never_sampled_are_never_decoded(tmp_path: Path, fall_clip: Path, every, expect):
    # demo spec: T=3, stride 3 -> a hyperframe is frames (a-6, a-3, a); first anchor is 6.
    src = CountingFile(str(fall_clip), "clip", SourceOptions(fast=True))
    cfg = RunConfig(
        cameras=("clip",),
        model=save_model(tmp_path / "m.onnx"),
        every=every,
        source_opts=SourceOptions(fast=True),
    )
    rt = Runtime(cfg, [ListSink()], threading.Event(), sources=[src])
    rt.run()
    sampler = rt.cameras[0].sampler
    assert src.decoded == [i for i in range(src.grabbed + 1) if sampler.is_needed(i)]
    if expect:
        assert src.decoded[: len(expect)] == expect
    assert len(src.decoded) == rt.cameras[0].capture.stats.decoded
    assert src.grabbed + 1 == 700


def test_fast_file_processes_every_hyperframe_and_finds_the_falls(tmp_path: Path, fall_clip: Path):
    sink = ListSink()
    cfg = RunConfig(
        cameras=(str(fall_clip),),
        model=save_model(tmp_path / "m.onnx"),
        source_opts=SourceOptions(fast=True),
    )
    rt = Runtime(cfg, [sink], threading.Event())
    assert rt.run() == 0
    stats = rt.cameras[0].capture.stats
    assert stats.published == 700 - 6 and stats.dropped == 0
    assert rt.latency.count == stats.published
    starts = [e for e in sink.events if e.kind == "start"]
    assert starts and all(e.label == "fall" for e in starts)
    assert sink.closed
    assert len(sink.events) == 2 * len(starts)  # every start has its end
    assert {e.id for e in sink.events if e.kind == "end"} == {e.id for e in starts}


def test_slow_inference_drops_stale_hyperframes_instead_of_queueing(tmp_path: Path):
    """A live source and a model slower than the camera: the backlog never exceeds one."""
    cfg = RunConfig(cameras=("synth://walk_left?fps=200",), model=save_model(tmp_path / "m.onnx"))
    stop = threading.Event()
    rt = Runtime(cfg, [ListSink()], stop)
    real_infer = rt.backend.infer

    def slow_infer(n=None) -> None:
        real_infer(n)
        stop.wait(0.02)  # 50 inferences/s against 200 frames/s

    rt.backend.infer = slow_infer
    threading.Timer(1.5, stop.set).start()
    rt.run()
    stats = rt.cameras[0].capture.stats
    assert stats.dropped > stats.published // 2
    assert rt.latency.count + stats.dropped >= stats.published - 1


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ((("smoke", 0.5),), "the model has no class 'smoke'; its classes are"),
    ],
)
def test_threshold_for_unknown_class_is_refused(tmp_path: Path, thresholds, message):
    cfg = RunConfig(
        cameras=("synth://fall",), model=save_model(tmp_path / "m.onnx"), thresholds=thresholds
    )
    with pytest.raises(UsageError, match=message):
        Runtime(cfg, [], threading.Event())


def test_threshold_override_changes_what_alerts(tmp_path: Path, fall_clip: Path):
    def starts(thresholds) -> int:
        sink = ListSink()
        cfg = RunConfig(
            cameras=(str(fall_clip),),
            model=save_model(tmp_path / "m.onnx"),
            thresholds=thresholds,
            source_opts=SourceOptions(fast=True),
        )
        Runtime(cfg, [sink], threading.Event()).run()
        return sum(e.kind == "start" for e in sink.events)

    assert starts(()) >= 1
    assert starts((("fall", 1.0),)) == 0
    assert starts((("normal", 0.5),)) >= 1  # any class can be made an alert class


def test_softmax_activation(tmp_path: Path):
    cfg = RunConfig(cameras=("synth://fall?frames=10",), model=save_model(tmp_path / "m.onnx"))
    rt = Runtime(cfg, [], threading.Event())
    assert rt.spec.activation == "softmax"
    rt.logits[:] = [[1.0, 3.0]]
    rt._activate()
    np.testing.assert_allclose(rt.probs, [[0.1192029, 0.8807971]], rtol=1e-6)


def test_sigmoid_activation_scores_each_class_on_its_own(tmp_path: Path):
    from dataclasses import replace

    spec = replace(MOTION_SPEC, activation="sigmoid")
    cfg = RunConfig(
        cameras=("synth://fall?frames=10",), model=save_model(tmp_path / "m.onnx", spec)
    )
    rt = Runtime(cfg, [], threading.Event())
    assert rt.spec.activation == "sigmoid"
    rt.logits[:] = [[1.0, 3.0]]
    rt._activate()
    # 1 / (1 + e^-x) per class: they need not sum to 1, unlike softmax
    np.testing.assert_allclose(rt.probs, [[0.7310586, 0.9525741]], rtol=1e-6)


def test_two_cameras_each_get_their_own_alerts(tmp_path: Path):
    sink = ListSink()
    cams = ("a=synth://fall?frames=80&seed=1", "b=synth://walk_right?frames=80&seed=2")
    cfg = RunConfig(
        cameras=cams, model=save_model(tmp_path / "m.onnx"), source_opts=SourceOptions(fast=True)
    )
    rt = Runtime(cfg, [sink], threading.Event())
    assert rt.run() == 0
    assert [c.capture.stats.grabbed for c in rt.cameras] == [80, 80]
    assert {e.camera for e in sink.events} == {"a"}  # the fall, not the walk
    assert rt.latency.count == sum(c.capture.stats.published for c in rt.cameras)


def test_a_stop_leaves_cameras_that_hang_in_their_open_behind(tmp_path: Path):
    """Two cameras that accept the connection and never answer (open timeout 4 s) beside a
    working one: the working camera's hyperframes are scored at once, and a stop returns
    without waiting for the opens, naming the cameras left behind (the CLI then ends the
    process with os._exit: edge_hf.cli)."""
    opts = SourceOptions(open_timeout=4.0)
    with HungCameras(2) as dead:
        urls = [f"hung{i}={u}" for i, u in enumerate(dead.urls)]
        cfg = RunConfig(
            cameras=("good=synth://walk_left", *urls),
            model=save_model(tmp_path / "m.onnx"),
            source_opts=opts,
        )
        stop = threading.Event()
        rt = Runtime(cfg, [ListSink()], stop)
        runner = threading.Thread(target=rt.run)
        t0 = time.monotonic()
        runner.start()
        try:
            assert wait_until(lambda: rt.cameras[0].processed >= 10, 3.0)  # within the opens
            stop.set()
            stopped = time.monotonic()
            runner.join(10)
            assert time.monotonic() - stopped < 2.0 and time.monotonic() - t0 < 4.0
            assert rt.abandoned == ["hung0", "hung1"]
        finally:
            stop.set()
            runner.join(10)
            for c in rt.cameras:  # not at interpreter exit: let them end here
                c.capture.join(10)
    assert not any(c.capture.is_alive() for c in rt.cameras)
