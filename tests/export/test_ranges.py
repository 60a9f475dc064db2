"""export/ranges.py: the alert agreement that ``--ranges auto`` chooses INT8 ranges by."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from export.ranges import alert_agreement, best, judge, scores
from tests.motion_model import MOTION_SPEC  # classes normal, fall; fall alerts at 0.8

SPEC = MOTION_SPEC


def _probs(fall: list[float]) -> np.ndarray:
    f = np.array(fall, np.float32)
    return np.stack([1 - f, f], 1)


def _logits(fall: list[float]) -> np.ndarray:
    return np.log(_probs(fall))  # softmax of these gives the scores back


@pytest.mark.parametrize(
    ("ref", "other", "want"),
    [
        ([0.95, 0.1, 0.85], [0.95, 0.1, 0.85], 1.0),  # the same alerts
        ([0.1, 0.2, 0.3], [0.2, 0.1, 0.4], 1.0),  # neither alerts anywhere: nothing to disagree on
        ([0.95, 0.1], [0.1, 0.95], 0.0),  # each alerts where the other does not
        # at 0.5 and at 0.9 the same; at 0.8 the float model's 2 alerts against INT8's 1: F1 2/3
        ([0.95, 0.85, 0.1], [0.95, 0.7, 0.1], (1 + 2 / 3 + 1) / 3),
    ],
)
def test_alert_agreement_is_the_f1_of_the_alerting_hyperframes(ref, other, want):
    assert alert_agreement(SPEC, _probs(ref), _probs(other)) == pytest.approx(want)


def test_the_choice_sees_fall_scores_that_top1_cannot():
    """The demo model under NNCF's ranges: the same class everywhere, but the fall's score
    squeezed below the alert threshold (docs/results.md). The other candidate loses a point of
    top-1 on a still hyperframe and keeps the alerts: it is the one chosen."""
    ref = _logits([0.97, 0.92, 0.85, 0.1, 0.3, 0.45])
    squeezed = _logits([0.7, 0.65, 0.6, 0.1, 0.3, 0.45])  # top-1 agrees on all six
    kept = _logits([0.96, 0.93, 0.84, 0.1, 0.3, 0.55])  # one still hyperframe flips to fall
    judged = {"nncf": judge(SPEC, ref, squeezed), "minmax": judge(SPEC, ref, kept)}
    assert judged["nncf"]["top1_agreement"] == 1.0 > judged["minmax"]["top1_agreement"]
    assert best(judged) == "minmax"


def test_ties_go_to_top1_agreement_then_to_the_first_listed():
    a = {"alert_agreement": 0.9, "top1_agreement": 0.8}
    b = {"alert_agreement": 0.9, "top1_agreement": 0.85}
    assert best({"minmax": a, "quantile": b}) == "quantile"
    assert best({"minmax": a, "quantile": dict(a), "nncf": dict(a)}) == "minmax"


def test_scores_use_the_models_own_activation():
    logits = np.array([[0.0, 2.0]], np.float32)
    assert scores(SPEC, logits)[0, 1] == pytest.approx(np.exp(2) / (1 + np.exp(2)))
    sigmoid = dataclasses.replace(SPEC, activation="sigmoid")
    assert scores(sigmoid, logits)[0].tolist() == pytest.approx([0.5, 1 / (1 + np.exp(-2))])
