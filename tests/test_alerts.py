from __future__ import annotations

import json
import re
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
        "level": "fast",
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
        "level": "fast",
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


# ---- events that last while the person is down, and the down level (issue 60) --------------
DOWN = dict(down_for=10.0, clear=3.0)


def story(lying: list[float], policy: AlertPolicy | None = None, fps: float = 10.0):
    """A fall (hyperframes 0-2, 2 of 3 at 0.9) then ``lying`` from hyperframe 3 on, at ``fps``
    hyperframes a second; every event the logic returns, and those of a ``close`` after."""
    policy = policy or AlertPolicy(
        (("fall", 0.5),), 2, 3, 0.0, (Then("fall", "lying", 0.6, 1.0),), **DOWN
    )
    logic = AlertLogic("cam", POSES, policy, fps)
    fall = [0.9, 0.9, 0.9] + [0.1] * len(lying)
    out = []
    for i, (f, ly) in enumerate(zip(fall, [0.0] * 3 + lying, strict=True)):
        out += logic.update(np.array([0.0, f, ly], np.float32), i, 1000.0 + i / fps)
    end = len(fall)
    return out, out + list(logic.close(end, 1000.0 + end / fps))


def kinds(events) -> list[tuple[str, str, int]]:
    return [(e.kind, e.level, e.frame) for e in events]


def test_a_fall_event_stays_open_while_down_and_ends_once_they_get_up():
    """Down for 5 s (hyperframes 3-52), then up: the event starts when lying is 2 of 3 (4),
    updates every 5 s, ends 3 s after the last lying hyperframe; no down level (5 s < 10 s)."""
    events, _ = story([0.9] * 50 + [0.1] * 40)
    assert kinds(events) == [("start", "fast", 4), ("update", "fast", 54), ("end", "fast", 82)]
    start, update, end = events
    assert start.first == 0 and start.down_for == pytest.approx(0.4)  # from the impact (0)
    assert update.id == end.id == start.id
    assert update.down_for == end.down_for == pytest.approx(5.2)  # 0 to 52, the last lying
    assert start.to_dict()["down_for"] == 0.4 and "down_for" in end.to_dict()


def test_a_person_who_never_gets_up_escalates_once_and_the_end_closes_both():
    events, closed = story([0.9] * 200)
    assert kinds(events) == [
        ("start", "fast", 4),
        ("update", "fast", 54),
        ("start", "down", 100),  # 10 s after the impact at 0
        ("update", "fast", 104),
        ("update", "fast", 154),
    ]
    down = events[2]
    assert down.id != events[0].id and down.key == "fall_down" and events[0].key == "fall"
    assert down.first == 100 and down.down_for == pytest.approx(10.0)
    assert down.to_dict()["level"] == "down" and down.to_dict()["label"] == "fall"
    # the stream ends while they are down: the down level ends first, then the event
    assert kinds(closed[len(events) :]) == [("end", "down", 203), ("end", "fast", 203)]
    assert closed[-2].id == down.id and closed[-1].id == events[0].id


def test_a_person_who_gets_up_just_before_the_time_raises_no_down_level():
    """Lying to 9.6 s after the impact, then up: the event lasts to 12.6 s (3 s clear), past
    the 10 s, but down_for stops growing when lying is no longer seen."""
    events, _ = story([0.9] * 94 + [0.1] * 60)
    assert [e for e in events if e.level == "down"] == []
    assert events[-1].kind == "end" and events[-1].down_for == pytest.approx(9.6)


def test_short_dips_in_the_pose_keep_the_event_and_its_clock():
    """Lying dips under its threshold for 2 s (under the 3 s clear) twice: still one event, and
    the down level comes at 10 s as without the dips."""
    lying = ([0.9] * 27 + [0.3] * 20) * 2 + [0.9] * 100
    events, _ = story(lying)
    assert [e.kind for e in events if e.level == "fast"].count("start") == 1
    assert not [e for e in events if e.kind == "end"]
    (down,) = [e for e in events if e.level == "down"]
    assert down.frame == 100


def test_the_down_level_re_alarms_while_it_lasts():
    policy = AlertPolicy(
        (("fall", 0.5),), 2, 3, 0.0, (Then("fall", "lying", 0.6, 1.0),), realarm=30.0, **DOWN
    )
    events, _ = story([0.9] * 800 + [0.0] * 40, policy)
    down = [e for e in events if e.level == "down"]
    assert kinds(down) == [
        ("start", "down", 100),
        ("realarm", "down", 400),
        ("realarm", "down", 700),
        ("end", "down", 832),  # 3 s after the last lying (802)
    ]
    assert {e.id for e in down} == {down[0].id}
    assert down[1].down_for == pytest.approx(40.0) and down[1].first == 400  # its own snapshot


def test_down_for_zero_is_no_down_level_and_times_are_video_seconds():
    policy = AlertPolicy(
        (("fall", 0.5),), 2, 3, 0.0, (Then("fall", "lying", 0.6, 1.0),), down_for=0.0
    )
    events, _ = story([0.9] * 300, policy)
    assert not [e for e in events if e.level == "down"]
    # at 25 hyperframes a second the same frames are 2.5 times fewer seconds: no down level yet
    events, _ = story([0.9] * 200, fps=25.0)
    assert not [e for e in events if e.level == "down"]
    events, _ = story([0.9] * 260, fps=25.0)
    assert [e.frame for e in events if e.level == "down"] == [250]


def test_a_class_without_a_pose_updates_while_open_and_ends_as_before():
    logic = AlertLogic("cam", CLASSES, AlertPolicy((("fall", 0.5),), 2, 3, 0.0), 10.0)
    out = []
    for i, f in enumerate([0.9] * 120 + [0.1] * 3):
        out += logic.update(np.array([0.0, f, 0.0], np.float32), i, 0.0)
    assert kinds(out) == [
        ("start", "fast", 1),
        ("update", "fast", 51),
        ("update", "fast", 101),
        ("end", "fast", 121),
    ]
    assert all(e.down_for is None and "down_for" not in e.to_dict() for e in out)


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"down_for": -1.0}, "--down-for must be 0 to 86400 seconds"),
        ({"realarm": 5.0}, "--re-alarm must be 0 (none) or 10 to 86400 seconds, found 5.0"),
        ({"down_for": float("nan")}, "--down-for"),
    ],
)
def test_bad_down_settings(kw, words):
    with pytest.raises(UsageError, match=re.escape(words)):
        AlertPolicy((("fall", 0.5),), **kw)


def test_times_follow_the_sources_frame_rate_when_a_camera_reopens_at_another():
    """Built for 25 fps, the camera reopens at 10 (edge_hf.camera sets ``fps``): the wait for
    lying, the clear, the update and the down level count frames of 10 fps."""
    policy = AlertPolicy((("fall", 0.5),), 2, 3, 0.0, (Then("fall", "lying", 0.6, 1.0),), **DOWN)
    logic = AlertLogic("cam", POSES, policy, 25.0)
    logic.fps = 10.0
    out = []
    for i, (f, ly) in enumerate(zip([0.9] * 3 + [0.1] * 200, [0.0] * 3 + [0.9] * 200, strict=True)):
        out += logic.update(np.array([0.0, f, ly], np.float32), i, 1000.0 + i / 10)
    assert kinds(out)[:3] == [("start", "fast", 4), ("update", "fast", 54), ("start", "down", 100)]
