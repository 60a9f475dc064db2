"""How often the model sees a labelled pose as that pose, over all streams and per stream: the
pose a class waits for (``lying`` after a fall) called something else on one camera is that
camera's falls missed "for want of the pose" (docs/results.md). Pure functions over
the scores ``models.evaluate`` records, as models/evaluation/events.py."""

from __future__ import annotations

from collections import Counter

import numpy as np

from models.evaluation.events import Stream

WORST = 3  # streams named in the printed line


def calls(s: Stream, label: str) -> Counter:
    """The top class of each of ``s``'s hyperframes whose newest frame is labelled ``label``."""
    spans = [(a, b) for a, b, lab in s.labels if lab == label]
    if not spans or not s.classes:
        return Counter()
    inside = np.zeros(len(s.anchors), bool)
    for a, b in spans:
        inside |= (s.anchors >= a) & (s.anchors <= b)
    counts = np.bincount(s.probs[inside].argmax(1), minlength=len(s.classes))
    return Counter({c: int(n) for c, n in zip(s.classes, counts, strict=True) if n})


def seen(streams: list[Stream], pose: str) -> dict | None:
    """``pose``'s labelled hyperframes: how many, how many the model called ``pose``, what it
    called them (most first), and per stream showing it the same, the least seen first. None
    when no stream labels the pose (or names the model's classes)."""
    rows = []
    for s in streams:
        c = calls(s, pose)
        if c:
            rows.append(
                {
                    "stream": s.name,
                    "hyperframes": c.total(),
                    "right": c[pose],
                    "called": dict(c.most_common()),
                }
            )
    if not rows:
        return None
    total = sum((Counter(r["called"]) for r in rows), Counter())
    rows.sort(key=lambda r: (r["right"] / r["hyperframes"], r["stream"]))
    return {
        "pose": pose,
        "hyperframes": total.total(),
        "right": total[pose],
        "called": dict(total.most_common()),
        "streams": rows,
    }


def _share(n: int, of: int) -> str:
    return f"{100.0 * n / of:.0f} %"


def _instead(r: dict, pose: str) -> str:
    """`` (hold 60 %)``: what a stream calls its pose most, when that is not the pose."""
    c, k = next(iter(r["called"].items()))
    return "" if c == pose else f" ({c} {_share(k, r['hyperframes'])})"


def line(cls: str, s: dict) -> str:
    """The printed line: how often the pose is seen as itself, what else it is called (1 % and
    more), and the streams where it is seen least (with what they call it instead)."""
    pose, n = s["pose"], s["hyperframes"]
    other = ", ".join(
        f"{c} {_share(k, n)}"
        for c, k in s["called"].items()
        if c != pose and round(100 * k / n) >= 1
    )
    worst = "; ".join(
        f"{r['stream']} {_share(r['right'], r['hyperframes'])} of "
        f"{r['hyperframes']}{_instead(r, pose)}"
        for r in s["streams"][:WORST]
    )
    return (
        f"({cls}: its pose {pose} called {pose} on {_share(s['right'], n)} of {n} labelled "
        f"hyperframes{f' ({other})' if other else ''}; least on {worst})"
    )
