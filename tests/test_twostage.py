"""Two-stage alerts end to end, in-process: a real screening model (tests/motion_model.py on
onnxruntime) and a real 2-input confirming model (OpenVINO), over video files the tests write."""

from __future__ import annotations

import threading
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

from edge_hf import synth
from edge_hf.errors import UsageError
from edge_hf.health import RateMeter
from edge_hf.motion import MotionOptions
from edge_hf.runtime import RunConfig, Runtime
from edge_hf.snapshots import SnapshotOptions
from edge_hf.sources import SourceOptions, open_source
from edge_hf.spec import Scale, Then
from tests.allocation import AllocationProbe
from tests.conftest import save_model, save_openvino
from tests.motion_model import MOTION_SPEC, constant_model
from tests.test_runtime import ListSink

# The confirming model: a pyramid over the screen's frames (fast 3x3, slow 3x8: 17 frames back)
PYRAMID = replace(MOTION_SPEC, scales=(Scale(3, 3), Scale(3, 8)), arch="constant")
ACCEPT, REJECT = [-5.0, 5.0], [5.0, -5.0]  # logits (normal, fall): fall 0.99995, 0.00005
FAST = SourceOptions(fast=True)


def confirming(tmp_path: Path, logits: list[float], spec=PYRAMID) -> Path:
    """The confirming model as OpenVINO IR (the screen runs on onnxruntime: both engines)."""
    onnx.save(constant_model(spec, logits), tmp_path / "confirm.onnx")
    return save_openvino(tmp_path / "confirm.onnx", tmp_path / "confirm.xml")


@pytest.fixture(scope="module")
def one_fall(tmp_path_factory) -> Path:
    """A real video file with one fall in it (160x120, 25 fps, MJPG)."""
    path = tmp_path_factory.mktemp("clips") / "fall.avi"
    synth.write_clip(path, synth.make_scene("fall", seed=3, size=(120, 160)), 100, fourcc="MJPG")
    return path


def run(tmp_path: Path, cameras, confirm: Path | None, **kw) -> tuple[Runtime, ListSink]:
    cfg = RunConfig(
        cameras=tuple(map(str, cameras)),
        model=save_model(tmp_path / "m.onnx"),
        confirm=confirm,
        source_opts=FAST,
        **kw,
    )
    sink = ListSink()
    rt = Runtime(cfg, [sink], threading.Event())
    assert rt.run() == 0
    return rt, sink


def starts(sink: ListSink) -> list:
    return [e for e in sink.events if e.kind == "start"]


def test_without_a_confirming_model_the_screen_alone_alerts_once(tmp_path, one_fall):
    rt, sink = run(tmp_path, [one_fall], None)
    assert len(starts(sink)) == 1 and starts(sink)[0].screen is None
    assert rt.counters().stages == () and "two_stage" not in RateMeter().report(rt.counters())


def test_screen_fires_and_confirm_rejects_no_event(tmp_path, one_fall):
    rt, sink = run(tmp_path, [one_fall], confirming(tmp_path, REJECT))
    assert sink.events == []
    two = rt.two
    assert two.screens >= 2 and two.rejections == two.screens and two.confirms == 0
    assert two.screens < rt.latency.count  # the confirming model ran only where screened


def test_confirm_accepts_one_event_with_both_scores(tmp_path, one_fall):
    rt, sink = run(tmp_path, [one_fall], confirming(tmp_path, ACCEPT))
    (ev,) = starts(sink)
    assert ev.score == pytest.approx(0.99995, abs=1e-4)  # the confirming model's
    assert 0.5 <= ev.screen < 1.0  # the screening model's, at or above the screening threshold
    assert ev.to_dict()["screen_score"] == round(ev.screen, 4)
    two = rt.two
    assert two.confirms == two.screens >= 2 and two.rejections == 0
    stats = RateMeter().report(rt.counters())["two_stage"]
    assert stats == {"screened": two.screens, "confirmed": two.confirms, "rejected": 0}
    # one ring, sized for the pyramid's 17-frame window, feeds both models
    assert rt.cameras[0].sampler.window == PYRAMID.window == 17


def test_the_screening_threshold_decides_what_is_confirmed(tmp_path, one_fall):
    low = run(
        tmp_path, [one_fall], confirming(tmp_path, ACCEPT), screen_thresholds=(("fall", 0.001),)
    )[0].two
    high = run(
        tmp_path, [one_fall], confirming(tmp_path, ACCEPT), screen_thresholds=(("fall", 0.99),)
    )[0].two
    assert low.screens > high.screens


def test_batched_cameras_and_motion_gating_each_get_their_own_confirmation(tmp_path, one_fall):
    """Two cameras in one batch, motion-gated: the walker's rows are screened out, the fall's
    rows are packed to the front of the confirming batch, and only the fall alerts."""
    walk = tmp_path / "walk.avi"
    synth.write_clip(
        walk, synth.make_scene("walk_right", seed=2, size=(120, 160)), 100, fourcc="MJPG"
    )
    rt, sink = run(
        tmp_path,
        [f"a={walk}", f"b={one_fall}"],
        confirming(tmp_path, ACCEPT),
        batch=2,
        batch_wait=0.05,
        motion=MotionOptions(enabled=True),
    )
    assert [e.camera for e in starts(sink)] == ["b"]
    assert rt.two.confirms >= 2 and rt.latency.calls < rt.latency.count  # batches of 2 ran


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"size": (96, 96)}, r"its size is \(96, 96\) where the screening model.s is \(160, 160\)"),
        (
            {"classes": ("normal", "fell"), "alert_classes": ()},
            "the confirming model has no class 'fall'",
        ),
    ],
)
def test_a_confirming_model_that_does_not_fit_is_refused(tmp_path, one_fall, change, message):
    model = confirming(tmp_path, ACCEPT, replace(PYRAMID, **change))
    with pytest.raises(UsageError, match=message):
        run(tmp_path, [one_fall], model)


def test_two_stage_steady_state_allocates_nothing_per_frame(tmp_path: Path):
    """Every hop screened and confirmed (screening threshold 0.001), snapshots on (the
    confirming model's centre frames kept): still no per-frame heap. Both models on
    onnxruntime, as in tests/test_runtime.py's probe (OpenVINO's Python wrapper and its
    telemetry thread keep objects of their own)."""
    onnx.save(constant_model(PYRAMID, REJECT), tmp_path / "confirm.onnx")
    probe = AllocationProbe(open_source("synth://walk_left?frames=1600", FAST), (300, 900, 1500))
    cfg = RunConfig(
        cameras=("x",),
        model=save_model(tmp_path / "m.onnx"),
        confirm=tmp_path / "confirm.onnx",
        screen_thresholds=(("fall", 0.001),),
        source_opts=FAST,
        snapshots=SnapshotOptions(tmp_path / "s"),
    )
    tracemalloc.start(1)
    try:
        rt = Runtime(cfg, [ListSink()], threading.Event(), sources=[probe])
        rt.run()
    finally:
        tracemalloc.stop()
    assert len(probe.snapshots) == 3, "the probe never reached its last frame"
    assert rt.two.screens == rt.latency.count  # the confirming model ran on every hop
    assert rt.cameras[0].capture.keep.index != [-1] * 13  # 3 + 2 + 8 slots, in use
    diff = probe.snapshots[2].compare_to(probe.snapshots[1], "lineno")
    assert sum(d.size_diff for d in diff) < 2048, "\n".join(str(d) for d in diff[:8])
    assert probe.peak - probe.base < 32_000


def test_the_mailbox_gathers_both_models_at_the_same_anchor():
    from edge_hf.capture import Mailbox
    from edge_hf.sampler import StrideSampler

    spec = replace(MOTION_SPEC, size=(2, 2))
    sampler = StrideSampler(spec, 1, replace(PYRAMID, size=(2, 2)))
    box = Mailbox(sampler, threading.Condition())
    # the pyramid's fast scale is the screen's input: gathered once, the slow one on its own
    assert sampler.shared == [0, None] and box.confirm[0] is None
    spare = [None, np.zeros_like(box.confirm[1])]
    for i in range(30):
        sampler.slot(i)[...] = i
        if sampler.is_anchor(i):
            box.put(i, i)
            screen = np.zeros_like(box.buffers[0])
            with box.cond:  # as the batcher does
                box.take([screen])
                full = box.swap_confirm(spare)
            got = [list(b[0, :, 0, 0, 0]) for b in (screen, full[1])]
            assert got == [*sampler.frames_of(i), sampler.frames_of(i, model=1)[1]]
            assert got == [[i - 6, i - 3, i], [i - 16, i - 8, i]]
            assert sampler.frames_of(i, model=1)[0] == got[0]
            spare = full  # buffers circulate: no copy, no allocation
    assert np.count_nonzero(sampler.ring) > 0


@pytest.mark.parametrize(("pose_threshold", "alerts"), [(0.3, 1), (0.9, 0)])
def test_a_fall_that_waits_for_lying_reads_lying_from_the_screen(
    tmp_path, one_fall, pose_threshold, alerts
):
    """The demo model's rule (a fall alerts once lying follows) in two-stage mode: the confirming
    model decides the fall; lying comes from the screen, which scores every hop (the confirming
    model sees only the screened ones). Lying was fed as 0, and such a camera never alerted."""
    three = ("normal", "fall", "lying")
    rule = (Then("fall", "lying", pose_threshold, 1.0),)
    screen = replace(MOTION_SPEC, classes=three, alert_then=rule)  # lying about 0.5 once still
    onnx.save(
        constant_model(replace(PYRAMID, classes=three), [-5.0, 5.0, -5.0]),
        tmp_path / "confirm.onnx",
    )
    confirm = save_openvino(tmp_path / "confirm.onnx", tmp_path / "confirm.xml")
    cfg = RunConfig(
        cameras=(str(one_fall),),
        model=save_model(tmp_path / "m.onnx", screen),
        confirm=confirm,
        source_opts=FAST,
    )
    sink = ListSink()
    rt = Runtime(cfg, [sink], threading.Event())
    logic, fed = rt.cameras[0].logic, []
    update = logic.update
    logic.update = lambda probs, *a: fed.append((probs.copy(), a[2].copy())) or update(probs, *a)
    assert rt.run() == 0
    assert rt.two.confirms >= 2
    assert len(starts(sink)) == alerts
    # what the alert logic (and the evaluator's replay) reads: the confirming model's fall on
    # the rows it scored, 0 on the others; the screen's normal and lying on every row
    for probs, screen in fed:
        assert probs[1] > 0.99 if screen[1] >= 0.5 else probs[1] == 0.0
        assert probs[0] == screen[0] and probs[2] == screen[2]
