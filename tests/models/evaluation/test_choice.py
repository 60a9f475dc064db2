"""models/evaluation/choice.py: the epoch is chosen with how well each validation video's best
window ranks the alert clips labelled whole above the others."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from models.evaluation.choice import alert_auc, auc, whole_alerts

WALK, FALL, HOLD = 0, 1, 2


def test_auc_counts_pairs_ranked_right_and_ties_as_half():
    assert auc(np.array([0.9, 0.8]), np.array([0.1, 0.8])) == pytest.approx(3.5 / 4)
    assert auc(np.array([0.2]), np.array([0.9, 0.5])) == 0.0


def windows(videos: dict[int, tuple[int, list[float]]]) -> tuple[np.ndarray, ...]:
    """Per window: softmax over (walk, fall, hold) whose fall column is given, the video id and
    the video's class."""
    probs, clips, truth = [], [], []
    for vid, (cls, falls) in videos.items():
        for f in falls:
            probs.append([(1 - f) / 2, f, (1 - f) / 2])
            clips.append(vid)
            truth.append(cls)
    return np.array(probs), np.array(clips), np.array(truth)


def test_a_fall_clip_is_scored_by_its_best_window_not_its_average():
    """The fall clip's windows average 0.3 (its walk and lying), under the hold clip's steady
    0.4, but its best window (the fall) is above every window of the others."""
    seen = windows(
        {7: (FALL, [0.05, 0.05, 0.95, 0.15]), 8: (WALK, [0.2, 0.3]), 9: (HOLD, [0.4, 0.4])}
    )
    assert alert_auc(*seen, (FALL,)) == 1.0
    blind = windows({7: (FALL, [0.05, 0.3, 0.2]), 8: (WALK, [0.2, 0.3]), 9: (HOLD, [0.4, 0.4])})
    # the fall's best window is tied with the walk's (half) and under the hold's
    assert alert_auc(*blind, (FALL,)) == pytest.approx(0.25)
    assert alert_auc(*windows({8: (WALK, [0.2]), 9: (HOLD, [0.4])}), (FALL,)) is None


def test_only_alert_classes_with_clips_labelled_whole_join_the_choice():
    w = SimpleNamespace(video=[FALL, WALK, FALL, HOLD], whole=[False, False, True, False])
    assert whole_alerts(w, frozenset({FALL})) == (FALL,)
    w.whole = [False, False, False, False]  # every fall annotated: top-1 alone
    assert whole_alerts(w, frozenset({FALL})) == ()
