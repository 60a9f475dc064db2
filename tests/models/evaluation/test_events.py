"""models/evaluation/events.py: the pure replay over recorded scores (streams built by hand, no
model): why a fall was missed, a fall that waits for lying, the recommended point and its wait."""

from __future__ import annotations

import numpy as np
import pytest

from edge_hf.spec import Then
from models.evaluation.events import (
    GRID,
    MISSES,
    Options,
    Stream,
    called_instead,
    label_at,
    misses,
    outcomes,
    point,
    recommend,
    sweep,
    with_wait,
)
from models.evaluation.wait import GRID as WAIT_GRID
from models.evaluation.wait import WITHIN, other_waits


def test_recommend_the_most_recall_within_the_false_alarm_target():
    rows = [
        {"threshold": 0.5, "recall": 1.0, "false_per_hour": 2.0},
        {"threshold": 0.8, "recall": 0.9, "false_per_hour": 0.4},
        {"threshold": 0.9, "recall": 0.9, "false_per_hour": 0.0},
        {"threshold": 0.95, "recall": 0.5, "false_per_hour": 0.0},
    ]
    assert recommend(rows, 0.5)["threshold"] == 0.9 and recommend(rows, 0.5)["meets_target"]
    assert recommend(rows, 5.0)["threshold"] == 0.5
    worst = recommend(rows[:1], 0.5)
    assert worst["threshold"] == 0.5 and not worst["meets_target"]


def test_a_false_alarm_is_named_by_the_segment_it_started_in():
    labels = ((0, 9, "walk"), (10, 19, "lie_down"), (25, 30, "sit_down"))
    assert [label_at(labels, f) for f in (0, 9, 10, 19, 22, 30)] == [
        "walk",
        "walk",
        "lie_down",
        "lie_down",
        "unlabelled",
        "sit_down",
    ]


def test_each_missed_fall_is_told_why():
    """Five falls at 25 fps, 2-of-3, cooldown 10 s: one never scores; one scores on one
    hyperframe in three; one comes 4 s after a false alarm (cooldown); one is caught 1.6 s
    after its impact; one is caught in time (not a miss)."""
    p = np.zeros(2000, np.float32)
    p[[200, 203, 206, 209]] = 1.0  # the fall at 200: isolated hits, never 2 of 3
    p[500:506] = 1.0  # a false alarm; its cooldown runs to about frame 757
    p[600:611] = 1.0  # the fall at 600 scores, but inside that cooldown
    p[1050:1061] = 1.0  # the fall at 1000 (impact 1010): caught 1.6 s late
    p[1505:1511] = 1.0  # the fall at 1500: in time
    falls = [(100, 110), (200, 210), (600, 610), (1000, 1010), (1500, 1510)]
    s = Stream("s", 25.0, 2000, np.arange(2000), np.stack([1 - p, p], 1), {"fall": falls})
    why = misses(outcomes([s], 1, "fall", 0.5, (2, 3), Options(cooldown=10.0)))
    assert why == dict(zip(MISSES, (1, 1, 1, 1, 0), strict=True))
    assert misses(outcomes([s], 1, "fall", 0.5, (2, 3), Options(cooldown=0.0)))[MISSES[1]] == 0


def test_a_fall_that_waits_for_lying_counts_only_the_falls_followed_by_it():
    """Three fall-like moments at 25 fps: the first two followed by lying (one within the
    second, one 2 s later), the third by nothing (a stumble). Waiting for lying within 1 s,
    the first is caught 0.12 s after its impact, the second is missed because nothing followed
    it in time, and the stumble raises no false alarm (it does without the wait). Each fall
    says what the model called the second after its impact."""
    fall, lying = np.zeros(1500, np.float32), np.zeros(1500, np.float32)
    fall[100:111] = 1.0
    lying[112:200] = 1.0  # from 2 hyperframes after the impact: 2 of 3 at frame 113
    fall[500:511] = 1.0
    lying[560:700] = 1.0  # 2 s late
    fall[1000:1011] = 1.0  # nothing after it
    probs = np.stack([1 - fall - lying, fall, lying], 1)
    labels = (
        (0, 99, "walk"),
        (100, 110, "fall"),
        (111, 199, "lying"),
        (1000, 1010, "stumble"),
        (1011, 1499, "stand"),
    )
    s = Stream(
        "s",
        25.0,
        1500,
        np.arange(1500),
        probs,
        {"fall": [(100, 110), (500, 510)]},
        labels,
        classes=("walk", "fall", "lying"),
    )
    wait = Options(cooldown=0.0, then=(Then("fall", "lying", 0.5, 1.0),))
    got = point([s], 1, "fall", 0.5, (2, 3), wait)
    assert (got["caught"], got["in_time"], got["false_alarms"]) == (1, 1, 0)
    assert got["delay_median"] == pytest.approx(3 / 25)
    lying[1012:1100] = 1.0  # the stumble followed by stillness: a false alarm, named by the move
    probs[:, 2] = lying
    got = point([s], 1, "fall", 0.5, (2, 3), wait)
    assert got["false_by_label"] == {"stumble": 1}
    told = outcomes([s], 1, "fall", 0.5, (2, 3), wait)
    assert misses(told)[MISSES[4]] == 1
    # in the second after each impact: lying after the first fall, still walking after the
    # second (its lying comes 2 s late), which is what the miss for want of the pose is called
    assert [e["after"] for e in told["events"]] == ["lying", "walk"]
    assert called_instead(told) == {"walk": 1}
    alone = point([s], 1, "fall", 0.5, (2, 3), Options(cooldown=0.0))
    assert (alone["caught"], alone["in_time"], alone["false_alarms"]) == (2, 2, 1)
    assert alone["false_by_label"] == {"stumble": 1}


def test_a_miss_for_want_of_the_pose_is_told_so_whatever_the_wait_less_replay_did():
    """A stumble (fall-like, nothing after it) at frame 100 and a fall at 300 whose lying
    comes too late. Without the wait the stumble's alert would cool down over the fall, but
    with it the stumble raises nothing: the fall was free to alert, its k of n came, and only
    the pose did not follow in time."""
    fall, lying = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    fall[100:111] = 1.0
    fall[300:311] = 1.0
    lying[400:600] = 1.0  # 3.5 s after the impact
    probs = np.stack([1 - fall - lying, fall, lying], 1)
    s = Stream(
        "s",
        25.0,
        1000,
        np.arange(1000),
        probs,
        {"fall": [(300, 310)]},
        ((100, 110, "stumble"),),
        classes=("walk", "fall", "lying"),
    )
    wait = Options(cooldown=10.0, then=(Then("fall", "lying", 0.5, 1.0),))
    why = misses(outcomes([s], 1, "fall", 0.5, (2, 3), wait))
    assert why == dict(zip(MISSES, (0, 0, 0, 0, 1), strict=True))


def test_the_recommended_point_may_wait_longer_for_the_pose_than_the_model_does():
    """A fall whose lying comes 0.72 s after its last arming hit, and a stumble whose stillness
    comes 0.88 s after: the model's own wait (0.4 s) catches neither; waiting 0.8 s catches
    the fall in time and still not the stumble (1 s would alert on it too), so that is the
    wait the recommended point names, and its outcomes are replayed at it."""
    fall, lying = np.zeros(1500, np.float32), np.zeros(1500, np.float32)
    fall[100:111] = 1.0
    lying[128:200] = 1.0
    fall[1000:1011] = 1.0
    lying[1032:1100] = 1.0
    probs = np.stack([1 - fall - lying, fall, lying], 1)
    labels = ((100, 110, "fall"), (1000, 1010, "stumble"))
    s = Stream(
        "s",
        25.0,
        1500,
        np.arange(1500),
        probs,
        {"fall": [(100, 110)]},
        labels,
        classes=("walk", "fall", "lying"),
    )
    own = Options(cooldown=0.0, then=(Then("fall", "lying", 0.5, 0.4),))
    assert point([s], 1, "fall", 0.5, (2, 3), own)["in_time"] == 0
    waits = other_waits([s], 1, "fall", GRID, own)
    assert {(r["wait"]["threshold"], r["wait"]["within"]) for r in waits} == {
        (g, w) for g in WAIT_GRID for w in WITHIN
    } - {(0.5, 0.4)}
    best = recommend(sweep([s], 1, "fall", GRID, (2, 3), own) + waits, 0.5)
    assert best["wait"]["within"] == 0.8 and best["meets_target"]
    assert (best["in_time"], best["false_alarms"]) == (1, 0)
    at = with_wait(own, "fall", best["wait"])
    assert misses(outcomes([s], 1, "fall", best["threshold"], (2, 3), at)) == dict.fromkeys(
        MISSES, 0
    )
    assert (
        other_waits([s], 1, "fall", GRID, Options(cooldown=0.0)) == []
    )  # no rule: nothing to vary


def test_the_sweep_separates_saturated_scores():
    """A model whose false alarms score 0.993 and whose falls 0.9995 (--action-top saturates
    its scores): the sweep has thresholds above 0.99, so one point keeps the fall and drops
    the false alarm."""
    p = np.full(2000, 0.01, np.float32)
    p[300:320] = 0.993  # a get-up, say
    p[1005:1015] = 0.9995  # the fall at 1000 (impact 1010)
    s = Stream("s", 25.0, 2000, np.arange(2000), np.stack([1 - p, p], 1), {"fall": [(1000, 1010)]})
    rows = sweep([s], 1, "fall", GRID, (2, 3), Options())
    clean = [r for r in rows if r["false_per_hour"] == 0 and r["recall"] == 1.0]
    assert [r["threshold"] for r in clean] == [0.995, 0.999]


def _down_stream(name: str, length: int, falls, lie_downs=()) -> Stream:
    """10 fps, classes (other, fall, lying). ``falls``: (impact, seconds lying after it, then a
    get-up; None: lying to the end); ``lie_downs``: (first lying frame, seconds) after a lie-down
    whose last frames the model takes for a fall. Fall scores 0.9 on the four frames up to the
    impact, lying 0.9 on every lying frame."""
    probs = np.zeros((length, 3), np.float32)
    labels, events = [], []
    for impact, secs in falls:
        probs[impact - 3 : impact + 1, 1] = 0.9
        end = length - 1 if secs is None else impact + round(secs * 10)
        probs[impact + 1 : end + 1, 2] = 0.9
        labels += [(impact - 3, impact, "fall"), (impact + 1, end, "lying")]
        if end + 1 < length:
            labels.append((end + 1, min(end + 20, length - 1), "get_up"))
        events.append((impact - 3, impact))
    for first, secs in lie_downs:
        probs[first - 4 : first, 1] = 0.9
        end = first + round(secs * 10) - 1
        probs[first : end + 1, 2] = 0.9
        labels += [(first - 30, first - 1, "lie_down"), (first, end, "lying")]
    return Stream(
        name,
        10.0,
        length,
        np.arange(length),
        probs,
        {"fall": events},
        tuple(sorted(labels)),
        classes=("other", "fall", "lying"),
    )


def test_the_down_level_counts_who_stayed_down_who_got_up_and_false_alarms():
    """Stream a: down 20 s (alerted), down 3 s (got up: not raised), a lie-down of 28 s that the
    model took for a fall (its down level is a false alarm), a fall with the person still down
    30 s later when the stream ends (alerted). Stream b ends 6 s after its fall: not long enough
    to count either way."""
    from models.evaluation.events import down_point, down_times

    a = _down_stream("a", 1800, [(100, 20.0), (500, 3.0), (1500, None)], [(800, 28.0)])
    b = _down_stream("b", 150, [(90, None)])
    assert down_times(a, "fall", "lying") == [
        (100, 301, False),
        (500, 531, False),
        (1500, 1800, True),
    ]
    assert down_times(b, "fall", "lying") == [(90, 150, True)]
    opts = Options(then=(Then("fall", "lying", 0.5, 1.0),))
    d = down_point([a, b], 1, "fall", 0.5, (2, 3), opts)
    assert (d["stayed_down"], d["got_up_sooner"], d["alerted"], d["in_time"]) == (2, 1, 2, 2)
    assert d["got_up_alerted"] == 0 and d["recall"] == 1.0
    assert d["false_alarms"] == 1 and d["false_by_label"] == {"lying": 1}
    assert d["false_per_hour"] == pytest.approx(1 / ((1800 + 150) / 10 / 3600))
    # 10 s counted from the first hit of the fall's k of n, 3 frames before its impact
    assert d["delay_median"] == pytest.approx(9.7) and d["delay_p95"] == pytest.approx(9.7)
    # the fast level at the same point: every fall in time, the lie-down a false alarm
    fast = point([a, b], 1, "fall", 0.5, (2, 3), opts)
    assert (fast["events"], fast["in_time"], fast["false_alarms"]) == (4, 4, 1)
    later = down_point([a, b], 1, "fall", 0.5, (2, 3), Options(then=opts.then, down_for=25.0))
    assert (later["stayed_down"], later["got_up_sooner"], later["in_time"]) == (1, 2, 1)
    assert later["false_alarms"] == 1  # the lie-down lasted 28 s
    assert down_point([a], 1, "fall", 0.5, (2, 3), Options()) is None  # waits for no pose
    # the sweep counts it in the same pass as the fast level, threshold by threshold
    rows = sweep([a, b], 1, "fall", (0.5, 0.95), (2, 3), opts)
    assert rows[0]["down"] == d
    assert rows[1]["down"]["alerted"] == 0 and rows[1]["down"]["stayed_down"] == 2
    assert sweep([a], 1, "fall", (0.5,), (2, 3), Options())[0]["down"] is None
