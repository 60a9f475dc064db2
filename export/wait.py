"""How a model's fall alert waits for lying (``Then``'s threshold and seconds), chosen per model.

A model with a ``lying`` class alerts on a fall only once lying follows it (export.checkpoint.
with_then). How high lying scores after a fall depends on the model: trained from scratch about
0.25, from the posture weights about 0.8 (README: Eighth round), so no one value suits both: 0.2
lets the second raise twice the false alarms it needs to, 0.5 makes the first miss most falls.
And a fall is followed by lying at once, a stumble or a get-up only later, if at all: the shorter
the wait, the fewer of those alert. The export chooses both: every validation video with frame
labels goes through the runtime (the exported ONNX file: its sampler, backend and activation), and
the runtime's own alert logic is replayed (models.events) at each threshold of ``GRID`` and each
wait of ``WITHIN``. Of the pairs that still alert in time on at least ``KEEP`` of the falls the
loosest pair does, the one with the fewest false alerts wins (ties: more falls in time, the higher
threshold, the shorter wait).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from edge_hf.spec import HyperframeSpec, Then
from models.data import Video
from models.events import Options, Stream, match, runs, starts, sweep, with_wait

GRID = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)  # the pose's threshold
WITHIN = (0.4, 0.6, 0.8, 1.0)  # seconds
KEEP = 0.9  # of the falls the loosest pair alerts on in time
MIN_FALLS = 8  # fewer validation falls than this say too little: Then's defaults stay


def segments(labels: tuple[int, ...], classes: tuple[str, ...]) -> tuple[tuple[int, int, str], ...]:
    """A video's per-frame class indices (-1: unlabelled) as (first, last, label) runs."""
    return tuple(runs([classes[c] if c >= 0 else None for c in labels]))


def streams(model: Path, videos: tuple[Video, ...], classes: tuple[str, ...]) -> list[Stream]:
    """The videos with frame labels, each scored by the runtime as a Stream."""
    from models.evaluate import scored  # the runtime; imported here to keep export light

    return [
        scored(model, v.path, str(v.path), list(segments(v.labels, classes)), Options())[0]
        for v in videos
        if not isinstance(v.labels, int)  # one label for the clip: no impact frame to measure
    ]


def count(s: list[Stream], spec: HyperframeSpec, then: Then, opts: Options) -> tuple[int, int]:
    """(falls alerted within ``opts.max_delay`` of their impact, false alerts) under ``then``."""
    column, thr = spec.classes.index(then.cls), spec.thresholds[then.cls]
    caught = false = 0
    for st in s:
        (alerts,) = starts(st, column, (thr,), opts.k, opts.n, opts.cooldown, then=then)
        delays, wrong = match(alerts, st.events[then.cls], st.fps, opts.match)
        caught += sum(d <= opts.max_delay for d in delays)
        false += len(wrong)
    return caught, false


def choose(rows: dict[tuple[float, float], tuple[int, int]], falls: int):
    """((threshold, within), why) from (falls in time, false alerts) per pair of GRID x WITHIN."""
    loose = (GRID[0], WITHIN[-1])
    if falls < MIN_FALLS:
        return (
            GRID[0],
            Then.within,
        ), f"{falls} validation falls (fewer than {MIN_FALLS}): defaults"
    need = math.ceil(KEEP * rows[loose][0])
    ok = [p for p, (caught, _) in rows.items() if caught >= need]
    best = min(ok, key=lambda p: (rows[p][1], -rows[p][0], -p[0], p[1]))
    return best, (
        f"the fewest false alerts ({rows[best][1]}, against {rows[loose][1]} at {loose[0]} within "
        f"{loose[1]:g} s) alerting in time on at least {KEEP:.0%} of the {rows[loose][0]} of "
        f"{falls} validation falls that the loosest wait does ({rows[best][0]})"
    )


def choose_wait(
    model: Path, spec: HyperframeSpec, videos: tuple[Video, ...], classes: tuple[str, ...]
) -> tuple[HyperframeSpec, dict]:
    """The spec with its (one) wait chosen on ``videos``, and what the report says of it."""
    (rule,) = spec.alert_then
    opts = Options()
    s = streams(model, videos, classes)
    falls = sum(len(st.events[rule.cls]) for st in s)
    rows = {
        (g, w): count(s, spec, replace(rule, threshold=g, within=w), opts)
        for g in GRID
        for w in WITHIN
    }
    (wait, within), why = choose(rows, falls)
    chosen = replace(spec, alert_then=(replace(rule, threshold=wait, within=within),))
    return chosen, {
        "rule": f"{rule.cls} then {rule.pose}",
        "threshold": wait,
        "within": within,
        "why": why,
        "falls": falls,
        "videos": len(s),
        "grid": [
            {"threshold": g, "within": w, "in_time": c, "false": f}
            for (g, w), (c, f) in rows.items()
        ],
    }


def other_waits(streams: list[Stream], column: int, cls: str, thresholds, opts: Options):
    """For a class that waits for a pose: ``models.events.sweep`` over ``thresholds`` at the
    runtime's k-of-n for every other wait this module could choose (GRID x WITHIN), so
    ``models.evaluate``'s recommended point may change the wait as well as the threshold; for
    any other class, nothing."""
    rule = opts.then_of(cls)
    if rule is None:
        return []
    pairs = [(g, w) for g in GRID for w in WITHIN if (g, w) != (rule.threshold, rule.within)]
    kn = (opts.k, opts.n)
    at = [with_wait(opts, cls, {"threshold": g, "within": w}) for g, w in pairs]
    return [r for o in at for r in sweep(streams, column, cls, thresholds, kn, o)]
