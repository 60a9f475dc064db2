"""models/evaluation/report.py: what the evaluator says of a recommended point that catches
nothing, and of falls missed for want of the pose."""

from __future__ import annotations

from models.evaluation.events import MISSES
from models.evaluation.report import none_in_time, pose_called


def point(threshold: float, in_time: int, false_per_hour: float, k: int = 2) -> dict:
    return {
        "threshold": threshold,
        "k": k,
        "n": 3,
        "events": 10,
        "in_time": in_time,
        "false_per_hour": false_per_hour,
    }


def test_a_quiet_point_that_catches_nothing_is_called_so_with_what_catching_costs():
    sweep = [point(0.5, 6, 40.0), point(0.7, 6, 12.0), point(0.9, 2, 3.0), point(0.999, 0, 0.0)]
    r = {"recommended": sweep[-1], "sweep": sweep}
    assert none_in_time("fall", r, 0.5) == [
        "(fall: the recommended point catches none of the 10 in time: within 0.5 false alarms "
        "an hour this model misses every one; the most in time, 6, cost 12.00 false/h "
        "(threshold 0.7, 2/3))"
    ]
    r = {"recommended": point(0.999, 0, 0.0), "sweep": [point(t, 0, 1.0) for t in (0.5, 0.9)]}
    assert none_in_time("fall", r, 0.5) == [
        "(fall: no point of the sweep catches any of the 10 in time)"
    ]
    assert none_in_time("fall", {"recommended": sweep[2], "sweep": sweep}, 5.0) == []


def test_falls_missed_for_want_of_the_pose_are_counted_by_what_the_model_called_them():
    def event(why: str | None, after: str | None) -> dict:
        return {
            "stream": "s",
            "first": 0,
            "impact": 10,
            "delay": None,
            "missed_because": why,
            "after": after,
        }

    events = [
        event(MISSES[4], "hold"),
        event(MISSES[4], "other"),
        event(MISSES[4], "hold"),
        event(None, "lying"),
        event(MISSES[0], "walk"),
    ]
    assert pose_called("fall", "operating", {"outcomes": {"events": events}}) == [
        "(fall, operating: the pose not in time, called after the impact: hold 2, other 1)"
    ]
    assert pose_called("fall", "operating", {"outcomes": {"events": events[3:]}}) == []
    unnamed = {"outcomes": {"events": [event(MISSES[4], None)]}}  # a stream without class names
    assert pose_called("fall", "recommended", unnamed) == []
