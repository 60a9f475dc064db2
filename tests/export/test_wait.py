"""export.wait: the wait for lying after a fall, chosen per model on its validation falls by the
runtime's own alert logic."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from edge_hf import synth
from edge_hf.spec import Then
from export.wait import GRID, MIN_FALLS, WITHIN, choose, choose_wait, count, segments
from models.data import Video
from models.events import Options, Stream
from tests.conftest import save_model
from tests.motion_model import MOTION_SPEC

CLASSES = ("normal", "fall", "lying")
SPEC = replace(MOTION_SPEC, classes=CLASSES, alert_then=(Then("fall", "lying"),))


def test_segments_are_the_runs_of_each_label():
    assert segments((0, 0, -1, 1, 1, 2, 2, 2, 0), CLASSES) == (
        (0, 1, "normal"), (3, 4, "fall"), (5, 7, "lying"), (8, 8, "normal")
    )  # fmt: skip


def _rows(caught, false):
    """GRID x WITHIN -> (caught, false) from two functions of the pair."""
    return {(g, w): (caught(g, w), false(g, w)) for g in GRID for w in WITHIN}


def test_the_fewest_false_alerts_that_keep_nine_falls_in_ten():
    # falls drop as the threshold rises past 0.35; false alerts drop as the wait shortens
    rows = _rows(lambda g, w: 20 if g <= 0.35 else 17, lambda g, w: round(w * 10) - round(g * 10))
    (thr, within), why = choose(rows, 20)
    assert (thr, within) == (0.35, 0.4)  # 18 >= 0.9 * 20 are kept only up to 0.35; 0.4 s: fewest
    assert "20 of 20 validation falls" in why and "(0, against 8 at 0.2 within 1 s)" in why


def test_ties_go_to_more_falls_then_the_higher_threshold_then_the_shorter_wait():
    rows = _rows(lambda g, w: 10 if (g, w) == (0.3, 0.6) else 9, lambda g, w: 0)
    assert choose(rows, 10)[0] == (0.3, 0.6)  # more falls in time
    rows = _rows(lambda g, w: 10, lambda g, w: 0)
    assert choose(rows, 10)[0] == (GRID[-1], WITHIN[0])


def test_too_few_falls_keep_the_defaults():
    rows = _rows(lambda g, w: MIN_FALLS - 1, lambda g, w: 3 if w > 0.5 else 0)
    pair, why = choose(rows, MIN_FALLS - 1)
    assert pair == (Then("fall", "lying").threshold, Then("fall", "lying").within)
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
    grid = {(r["threshold"], r["within"]): (r["in_time"], r["false"]) for r in report["grid"]}
    assert report["falls"] == report["videos"] == MIN_FALLS
    assert grid[GRID[0], WITHIN[-1]][0] >= MIN_FALLS - 1  # the motion model alerts on these
    assert all(grid[0.5, w][0] == 0 for w in WITHIN)  # lying stays below 0.5
    assert spec.alert_then == (Then("fall", "lying", report["threshold"], report["within"]),)
    # lying about 0.49 once each figure is down, no false alert: 0.45, the shortest that keeps them
    assert report["threshold"] == 0.45
    assert grid[0.45, report["within"]][0] >= 0.9 * grid[GRID[0], WITHIN[-1]][0]
    shorter = [w for w in WITHIN if w < report["within"]]
    assert all(grid[0.45, w][0] < 0.9 * grid[GRID[0], WITHIN[-1]][0] for w in shorter)
