from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from edge_hf.alerts import AlertLogic, AlertPolicy
from edge_hf.errors import UsageError
from edge_hf.runtime import RunConfig, alert_policy
from edge_hf.spec import HyperframeSpec, Then

CLASSES = ("normal", "fall", "wave")


def run(scores: list[float], k: int = 2, n: int = 3, cooldown: float = 0.0, fps: float = 10.0):
    """Feed fall scores (one per hyperframe); return (kind, frame) of every event."""
    logic = AlertLogic("cam", CLASSES, AlertPolicy((("fall", 0.5),), k, n, cooldown), fps)
    out = []
    for i, s in enumerate(scores):
        probs = np.array([1 - s, s, 0.0], np.float32)
        out += [(e.kind, e.frame) for e in logic.update(probs, i, 1000.0 + i)]
    return out


@pytest.mark.parametrize(
    ("scores", "k", "n", "events"),
    [
        ([0.9, 0.1, 0.1], 1, 1, [("start", 0), ("end", 1)]),
        ([0.9, 0.1, 0.9, 0.1], 2, 3, [("start", 2), ("end", 3)]),  # 2 of 3 above, then 2 of 3 below
        ([0.9, 0.1, 0.1, 0.1], 2, 3, []),  # a single spike is not an alert
        (
            [0.9, 0.9, 0.2, 0.9, 0.9, 0.2, 0.2],
            2,
            3,
            [("start", 1), ("end", 6)],
        ),  # a dip does not end it
        ([0.6, 0.6, 0.6, 0.1, 0.1, 0.1], 3, 3, [("start", 2), ("end", 5)]),
        ([0.5, 0.5, 0.49, 0.49], 2, 2, [("start", 1), ("end", 3)]),  # threshold is >=
    ],
)
def test_k_of_n_hysteresis(scores, k, n, events):
    assert run(scores, k, n) == events


@pytest.mark.parametrize(
    ("scores", "k", "n", "first"),
    [
        ([0.9], 1, 1, 0),
        ([0.1, 0.9, 0.1, 0.9], 2, 3, 1),  # the run that made it began at the first hit
        ([0.9, 0.1, 0.1, 0.9, 0.9], 2, 3, 3),  # a hit out of the window is not part of it
        ([0.9, 0.1, 0.9, 0.1, 0.9, 0.9], 3, 4, 2),
        ([0.9, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.9, 0.9], 2, 3, 0),  # the second start: 8
    ],
)
def test_a_start_names_the_first_hyperframe_of_its_run(scores, k, n, first):
    logic = AlertLogic("cam", CLASSES, AlertPolicy((("fall", 0.5),), k, n, 0.0), 10.0)
    starts = [
        e
        for i, s in enumerate(scores)
        for e in logic.update(np.array([1 - s, s, 0.0], np.float32), 100 + i, 0.0)
        if e.kind == "start"
    ]
    assert starts[0].first == 100 + first
    assert all(e.first == -1 for e in logic.close(200, 0.0))  # an end names none
    if len(starts) > 1:
        assert starts[1].first == 108


def test_cooldown_is_counted_in_video_seconds():
    burst = [0.9, 0.9, 0.1, 0.1, 0.1]
    # fps 10, cooldown 1 s = 10 frames after the end at frame 3: the burst at 5 is suppressed,
    # the one at 15 is not
    scores = burst + burst + [0.1] * 5 + burst
    assert run(scores, cooldown=1.0) == [("start", 1), ("end", 3), ("start", 16), ("end", 18)]
    assert run(scores, cooldown=0.0) == [
        ("start", 1),
        ("end", 3),
        ("start", 6),
        ("end", 8),
        ("start", 16),
        ("end", 18),
    ]


def test_a_start_after_the_cooldown_carries_the_peak_of_the_hits_that_made_it():
    """Hits during the cooldown (a second fall) still count once it is over: the start then
    comes on a lower score, and its peak is that of its hits, never below the threshold."""
    logic = AlertLogic("cam", CLASSES, AlertPolicy((("fall", 0.5),), 2, 3, 1.0), 10.0)
    scores = [0.9, 0.9, 0.1, 0.1, 0.1] + [0.1] * 6 + [0.7, 0.8, 0.2]
    events = [
        e
        for i, s in enumerate(scores)
        for e in logic.update(np.array([1 - s, s, 0.0], np.float32), i, 0.0)
    ]
    late = events[2]
    assert (late.kind, late.frame, late.score) == ("start", 13, pytest.approx(0.2))
    assert late.peak == pytest.approx(0.8)


def test_events_carry_id_peak_and_utc_time():
    logic = AlertLogic("porch", CLASSES, AlertPolicy((("fall", 0.5), ("wave", 0.8)), 1, 1, 0), 25)
    start = logic.update(np.array([0.3, 0.6, 0.1], np.float32), 7, 1_764_480_000.25)
    assert logic.update(np.array([0.1, 0.9, 0.0], np.float32), 8, 1_764_480_000.5) == ()
    end = logic.update(np.array([0.8, 0.2, 0.0], np.float32), 9, 1_764_480_001.0)
    (s,), (e,) = start, end
    assert s.id == e.id and len(s.id) == 36
    assert json.loads(json.dumps(s.to_dict())) == {
        "event": "start",
        "id": s.id,
        "camera": "porch",
        "label": "fall",
        "score": 0.6,
        "peak": 0.6,
        "frame": 7,
        "time": "2025-11-30T05:20:00.250Z",
    }
    assert e.to_dict() | {"id": None} == {
        "event": "end",
        "id": None,
        "camera": "porch",
        "label": "fall",
        "score": 0.2,
        "peak": 0.9,
        "frame": 9,
        "time": "2025-11-30T05:20:01.000Z",
    }


def test_classes_are_independent_and_close_ends_open_events():
    logic = AlertLogic("c", CLASSES, AlertPolicy((("fall", 0.5), ("wave", 0.5)), 1, 1, 0), 25)
    both = logic.update(np.array([0.0, 0.6, 0.6], np.float32), 1, 1.0)
    assert sorted(e.label for e in both) == ["fall", "wave"]
    closed = logic.close(5, 2.0)
    assert sorted((e.kind, e.label) for e in closed) == [("end", "fall"), ("end", "wave")]
    assert {e.id for e in closed} == {e.id for e in both}
    assert logic.close(6, 3.0) == ()


@pytest.mark.parametrize(("k", "n", "cooldown"), [(0, 3, 0), (4, 3, 0), (1, 1, -1)])
def test_bad_policy(k, n, cooldown):
    with pytest.raises(UsageError):
        AlertPolicy((("fall", 0.5),), k, n, cooldown)


POSES = ("normal", "fall", "lying")


def waits(fall: list[float], lying: list[float], within: float = 0.5, cooldown: float = 0.0):
    """Feed (fall, lying) scores at 10 hyperframes a second to a 2-of-3 logic whose fall waits
    for lying within ``within`` s; return the start events."""
    policy = AlertPolicy((("fall", 0.5),), 2, 3, cooldown, (Then("fall", "lying", 0.6, within),))
    logic = AlertLogic("cam", POSES, policy, 10.0)
    out = []
    for i, (f, ly) in enumerate(zip(fall, lying, strict=True)):
        out += [
            e for e in logic.update(np.array([0.0, f, ly], np.float32), i, 0.0) if e.kind == "start"
        ]
    return out


def test_a_fall_followed_by_lying_starts_once_lying_is_k_of_n():
    fall = [0.1, 0.7, 0.9, 0.8, 0.2, 0.1, 0.1, 0.1]
    lying = [0.0, 0.0, 0.7, 0.7, 0.3, 0.9, 0.9, 0.9]  # not the arming hyperframe's (2): 3 and 5
    (ev,) = waits(fall, lying)
    assert (ev.frame, ev.first, ev.score, ev.peak) == (5, 1, pytest.approx(0.9), pytest.approx(0.9))


@pytest.mark.parametrize(
    ("fall", "lying"),
    [
        ([0.9, 0.9, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2], [0.0] * 8),  # a stumble: nothing follows
        (
            [0.2, 0.2, 0.9, 0.9, 0.2, 0.2, 0.2, 0.2],
            [0.9, 0.9, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0],
        ),  # a get-up
        # 2 of 3 held to hyperframe 2, lying from 0.5 s after it: one hit in time, one late
        ([0.9, 0.9, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2], [0.0] * 7 + [0.9, 0.9]),
    ],
)
def test_a_fall_not_followed_by_lying_in_time_raises_nothing(fall, lying):
    assert waits(fall, lying) == []


def test_a_lapsed_fall_leaves_no_cooldown_and_each_start_rearms():
    """The stumble at 0 lapses; the fall at 10 is still caught (a cooldown of 60 s would have
    held it had the stumble alerted). Re-arming hits extend the wait from the last of them."""
    fall = [0.9, 0.9] + [0.1] * 8 + [0.9, 0.9, 0.1, 0.1, 0.1, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1]
    lying = [0.0] * 17 + [0.9, 0.9, 0.9, 0.9, 0.9]
    (ev,) = waits(fall, lying, within=0.5, cooldown=60.0)
    assert (ev.frame, ev.first) == (18, 10)


def test_an_armed_class_names_the_first_its_start_will_carry():
    """What the camera holds a snapshot frame for (edge_hf.camera.hold_armed): the arming run's
    first hyperframe, kept through re-arming, until the start or the lapse."""
    policy = AlertPolicy((("fall", 0.5),), 2, 3, 0.0, (Then("fall", "lying", 0.6, 0.3),))
    logic = AlertLogic("cam", POSES, policy, 10.0)
    assert logic.waiting_classes == (0,)
    fall = [0.1, 0.9, 0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.1, 0.1]
    lying = [0.0] * 12 + [0.9, 0.9]
    seen = []
    for i, (f, ly) in enumerate(zip(fall, lying, strict=True)):
        starts = logic.update(np.array([0.0, f, ly], np.float32), i, 0.0)
        seen.append((logic.armed_first(0), [e.first for e in starts if e.kind == "start"]))
    assert [a for a, _ in seen] == [-1, -1, 1, 1, 1, 1, 1, 1, 1, -1, -1, 10, 10, -1]
    assert seen[13][1] == [
        10
    ]  # the wait lapsed at 9, 0.3 s after the last arming; the start at 13 carries 10
    plain = AlertLogic("cam", POSES, AlertPolicy((("fall", 0.5),)), 10.0)
    assert plain.waiting_classes == ()


def test_then_must_name_the_models_classes():
    spec = HyperframeSpec(3, 1, (32, 32), POSES, (("fall", 0.5),))
    cfg = RunConfig(cameras=("x",), then=(Then("fall", "lying_down"),))
    with pytest.raises(
        UsageError, match="--then fall=lying_down: the model has no class 'lying_down'"
    ):
        alert_policy(spec, cfg)
    with pytest.raises(UsageError, match="threshold in"):
        AlertPolicy((("fall", 0.5),), then=(Then("fall", "lying", 1.5),))
    ruled = replace(spec, alert_then=(Then("fall", "lying"),))  # the model's, unless --then
    assert alert_policy(ruled, RunConfig(cameras=("x",))).then == ruled.alert_then
    assert alert_policy(ruled, RunConfig(cameras=("x",), then=())).then == ()
