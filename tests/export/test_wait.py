"""export.wait: the wait for lying after a fall, chosen per model on its validation falls by the
runtime's own alert logic."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from edge_hf import synth
from edge_hf.spec import Then
from export.wait import GRID, MIN_FALLS, choose, choose_wait, in_time, segments
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


def test_the_highest_wait_that_keeps_nine_falls_in_ten():
    caught = dict(zip(GRID, (20, 20, 19, 18, 17, 12, 3), strict=True))
    assert choose(caught, 20) == (0.35, choose(caught, 20)[1])  # 18 >= 0.9 * 20, 17 is not
    assert "20 of 20 validation falls" in choose(caught, 20)[1]


def test_too_few_falls_keep_the_lowest_wait():
    caught = dict.fromkeys(GRID, MIN_FALLS - 1)
    wait, why = choose(caught, MIN_FALLS - 1)
    assert wait == GRID[0] and f"fewer than {MIN_FALLS}" in why


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
    streams = [_stream(0.3), _stream(0.42), _stream(0.6)]
    counts = [in_time(streams, SPEC, SPEC.alert_then[0], g, Options()) for g in GRID]
    # 0.2-0.3: all three; 0.35, 0.4: two; 0.45, 0.5: the one at 0.6
    assert counts == [3, 3, 3, 2, 2, 1, 1]


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
    counts = list(report["in_time"].values())
    assert report["falls"] == report["videos"] == MIN_FALLS
    assert counts[0] >= MIN_FALLS - 1  # the motion model alerts on these falls
    assert counts == sorted(counts, reverse=True) and counts[-1] == 0  # lying stays below 0.5
    assert spec.alert_then == (Then("fall", "lying", report["threshold"], 1.0),)
    # lying about 0.49 after each fall: 0.45 is the highest wait that keeps them
    assert report["threshold"] == 0.45 and report["in_time"]["0.45"] == counts[0]
