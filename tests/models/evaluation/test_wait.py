"""models.evaluation.wait: the wait for lying after a fall, chosen per model from how high lying
scores after its validation falls, read through the runtime."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from edge_hf import synth
from edge_hf.spec import Then
from models.data import Video
from models.evaluation.events import Options, Stream
from models.evaluation.wait import (
    GRID,
    MIN_FALLS,
    SECONDS,
    SHARE,
    WITHIN,
    choose,
    choose_wait,
    count,
    lying_peaks,
    segments,
)
from tests.conftest import save_model
from tests.motion_model import MOTION_SPEC

CLASSES = ("normal", "fall", "lying")
SPEC = replace(MOTION_SPEC, classes=CLASSES, alert_then=(Then("fall", "lying"),))


def test_segments_are_the_runs_of_each_label():
    assert segments((0, 0, -1, 1, 1, 2, 2, 2, 0), CLASSES) == (
        (0, 1, "normal"),
        (3, 4, "fall"),
        (5, 7, "lying"),
        (8, 8, "normal"),
    )


def test_four_tenths_of_the_median_lying_peak_down_to_the_grid():
    # from the posture weights lying peaks near 0.9 after a fall; a stumble may reach less
    assert choose([0.9] * 6 + [0.1] * 3)[:2] == (0.35, SECONDS)  # median 0.9: 0.36
    assert choose([0.79, 0.8, 0.62, 0.95, 0.3, 0.99, 0.85, 0.7])[:2] == (0.3, SECONDS)  # 0.318
    threshold, _, why = choose([1.0] * 10)
    assert threshold == 0.4 and "1.00 (median)" in why and "10 falls" in why


def test_a_model_whose_lying_stays_low_waits_for_the_lowest_threshold():
    # from scratch: lying about 0.25 after a fall (docs/results.md)
    assert choose([0.25, 0.3, 0.22, 0.28, 0.26, 0.31, 0.2, 0.24])[:2] == (GRID[0], SECONDS)
    assert choose([0.0] * MIN_FALLS)[:2] == (GRID[0], SECONDS)


def test_too_few_falls_keep_the_defaults():
    threshold, within, why = choose([0.9] * (MIN_FALLS - 1))
    assert (threshold, within) == (Then("fall", "lying").threshold, Then("fall", "lying").within)
    assert f"fewer than {MIN_FALLS}" in why


def _stream(lying: float) -> Stream:
    """25 fps, one fall (frames 50-60) whose score is 0.95 from frame 52; lying at ``lying``
    from the impact on, 0 before."""
    anchors = np.arange(100)
    probs = np.zeros((100, 3), np.float32)
    probs[52:61, 1] = 0.95
    probs[61:, 2] = lying
    probs[:, 0] = 1 - probs[:, 1:].sum(1)
    labels = ((0, 49, "normal"), (50, 60, "fall"), (61, 99, "lying"))
    return Stream("s", 25.0, 100, anchors, probs, {"fall": [(50, 60)]}, labels, classes=CLASSES)


def test_a_fall_counts_at_the_waits_its_lying_score_reaches():
    rule = SPEC.alert_then[0]
    streams = [_stream(0.3), _stream(0.42), _stream(0.6)]
    counts = [count(streams, SPEC, replace(rule, threshold=g), Options()) for g in GRID]
    # 0.2-0.3: all three; 0.35, 0.4: two; 0.45, 0.5: the one at 0.6; none is a false alert
    assert counts == [(3, 0), (3, 0), (3, 0), (2, 0), (2, 0), (1, 0), (1, 0)]


def test_the_lying_peak_is_read_from_the_impact_to_one_second_after():
    rule = SPEC.alert_then[0]
    late = _stream(0.7)
    late.probs[61:86, 2] = 0.0  # lying from frame 86: 1.04 s after the impact at frame 60
    cut = _stream(0.7)
    cut.anchors, cut.probs = cut.anchors[:61], cut.probs[:61]  # ends at the impact: nothing to read
    assert lying_peaks([_stream(0.3), _stream(0.6), late, cut], rule) == [
        pytest.approx(0.3),
        pytest.approx(0.6),
        0.0,
    ]


def test_lying_that_comes_late_is_a_false_alert_only_for_the_longer_waits():
    """No fall labelled: a stumble's score (0.95), then lying half a second after it, as a get-up
    may look."""
    s = _stream(0.6)
    s.events["fall"] = []
    s.probs[61:71, 2] = 0.0  # lying from frame 71; its 2 of 3 at 72, 0.48 s after frame 60
    rule = SPEC.alert_then[0]
    got = [count([s], SPEC, replace(rule, within=w), Options())[1] for w in WITHIN]
    assert got == [0, 1, 1, 1]


@pytest.fixture(scope="module")
def falls(tmp_path_factory) -> tuple[Path, tuple[Video, ...]]:
    """Eight real clips of a synthetic fall (MJPG files), labelled per frame from the scene's
    own phases, and a hand-built ONNX model that scores the fall from motion and gives lying
    the rest (about 0.49 once the figure is still)."""
    tmp = tmp_path_factory.mktemp("wait")
    model = save_model(tmp / "m.onnx", SPEC)
    videos = []
    for seed in range(MIN_FALLS):
        scene = synth.make_scene("fall", seed=seed, size=(120, 160))
        path = tmp / f"fall{seed}.avi"
        synth.write_clip(path, scene, scene.length, fourcc="MJPG")
        labels = [0] * scene.length
        for start, end, label in scene.phases():
            for f in range(start, end + 1):
                labels[f] = CLASSES.index(label) if label in CLASSES else 0
        videos.append(Video(path, tuple(labels), cls=1))
    return model, tuple(videos)


def test_the_falls_go_through_the_runtime_and_the_wait_is_chosen(falls):
    model, videos = falls
    spec, report = choose_wait(model, SPEC, videos, CLASSES)
    grid = {r["threshold"]: (r["in_time"], r["false"]) for r in report["grid"]}
    assert report["falls"] == report["videos"] == MIN_FALLS
    assert {r["within"] for r in report["grid"]} == {SECONDS} and set(grid) == set(GRID)
    assert grid[GRID[0]][0] >= MIN_FALLS - 1  # the motion model alerts on these
    assert grid[0.5][0] == 0  # lying stays below 0.5
    # lying about 0.49 once each figure is down: 0.4 of it is under the grid's lowest
    assert 0.4 < report["lying_median"] < 0.5 and SHARE * report["lying_median"] < GRID[0]
    assert report["threshold"] == GRID[0]
    assert spec.alert_then == (Then("fall", "lying", report["threshold"], SECONDS),)
