"""models/evaluation/phases.py on hand-built streams: how often a labelled pose is called that
pose, in all and per stream, the least seen first, and the printed line."""

from __future__ import annotations

import numpy as np

from models.evaluation import phases
from models.evaluation.events import Stream

CLASSES = ("hold", "lying", "other")


def _stream(name: str, calls: list[int], labels) -> Stream:
    """One hyperframe per frame, its top class ``calls[i]`` (a score of 0.8 against 0.1)."""
    probs = np.full((len(calls), 3), 0.1, np.float32)
    probs[np.arange(len(calls)), calls] = 0.8
    return Stream(name, 25.0, len(calls), np.arange(len(calls)), probs, {}, labels, classes=CLASSES)


def test_a_pose_is_counted_by_what_each_stream_calls_it_least_seen_first() -> None:
    near = _stream("near", [2] * 10 + [1] * 20, ((0, 9, "stand"), (10, 29, "lying")))
    # the far camera: of its 20 lying frames, 5 called lying, 12 an arm held out, 3 other
    far = _stream(
        "far", [0] * 10 + [1] * 5 + [0] * 12 + [2] * 3, ((0, 9, "stand"), (10, 29, "lying"))
    )
    many = _stream("many", [1] * 197 + [2] * 2 + [0], ((0, 199, "lying"),))  # 1 % and 0.5 %
    s = phases.seen([near, far], "lying")
    assert s == {
        "pose": "lying",
        "hyperframes": 40,
        "right": 25,
        "called": {"lying": 25, "hold": 12, "other": 3},
        "streams": [
            {
                "stream": "far",
                "hyperframes": 20,
                "right": 5,
                "called": {"hold": 12, "lying": 5, "other": 3},
            },
            {"stream": "near", "hyperframes": 20, "right": 20, "called": {"lying": 20}},
        ],
    }
    assert phases.line("fall", phases.seen([many], "lying")) == (
        "(fall: its pose lying called lying on 98 % of 200 labelled hyperframes (other 1 %); "
        "least on many 98 % of 200)"
    )  # hold, 0.5 %, is not named
    assert phases.line("fall", s) == (
        "(fall: its pose lying called lying on 62 % of 40 labelled hyperframes (hold 30 %, "
        "other 8 %); least on far 25 % of 20 (hold 60 %); near 100 % of 20)"
    )


def test_frames_outside_the_pose_and_unnamed_classes_count_for_nothing() -> None:
    labels = ((0, 4, "lying"), (5, 9, "stand"), (10, 11, "lying"))
    s = _stream("s", [1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 2, 1], labels)
    assert phases.calls(s, "lying") == {"lying": 3, "hold": 3, "other": 1}
    assert phases.seen([s], "sitting") is None  # no stream labels it
    unnamed = Stream("u", 25.0, 12, np.arange(12), s.probs, {}, labels)
    assert phases.seen([unnamed], "lying") is None
