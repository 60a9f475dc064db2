"""How a model's fall alert waits for lying (``Then``'s threshold and seconds), chosen per model.

A model with a ``lying`` class alerts on a fall only once lying follows it (export.alert_spec.
with_then). How high lying scores after a fall depends on the model: trained from scratch about
0.25, from the posture weights about 0.9 (docs/results.md), so no one threshold suits both.
The export reads it off the model: every validation video with frame labels goes through the
runtime (the exported ONNX file: its sampler, backend and activation), each labelled fall's
lying peak is read from its impact to ``HORIZON`` seconds after, and the threshold is the
highest of ``GRID`` no more than ``SHARE`` of their median. The wait is ``SECONDS``: on eight
models' streams a longer wait bought a few falls for many more false alarms (docs/results.md). Counting validation falls and false alerts per pair, as this module did before,
did no better over those eight than one fixed pair for all: 18 validation falls and a handful of
false alerts say too little. The report keeps those counts at each threshold of ``GRID``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from edge_hf.spec import HyperframeSpec, Then
from models.data import Video
from models.evaluation.events import Options, Stream, match, runs, starts, sweep, with_wait

GRID = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)  # the pose's threshold
SECONDS = 0.4  # the wait the export writes
SHARE = 0.4  # of the median lying peak after a validation fall
HORIZON = 1.0  # seconds after a fall's impact where its lying peak is read
MIN_FALLS = 8  # fewer validation falls than this say too little: Then's defaults stay
WITHIN = (0.4, 0.6, 0.8, 1.0)  # seconds: the waits models.evaluate tries beside a model's own


def segments(labels: tuple[int, ...], classes: tuple[str, ...]) -> tuple[tuple[int, int, str], ...]:
    """A video's per-frame class indices (-1: unlabelled) as (first, last, label) runs."""
    return tuple(runs([classes[c] if c >= 0 else None for c in labels]))


def streams(model: Path, videos: tuple[Video, ...], classes: tuple[str, ...]) -> list[Stream]:
    """The videos with frame labels, each scored by the runtime as a Stream."""
    from models.evaluation.streams import scored  # the runtime; imported here to keep export light

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


def lying_peaks(s: list[Stream], rule: Then) -> list[float]:
    """Each labelled ``rule.cls`` event's highest ``rule.pose`` score from its impact to
    ``HORIZON`` seconds after (events with no hyperframe there are left out)."""
    out = []
    for st in s:
        column = st.classes.index(rule.pose)
        for _, impact in st.events[rule.cls]:
            sel = (st.anchors > impact) & (st.anchors <= impact + round(HORIZON * st.fps))
            if sel.any():
                out.append(float(st.probs[sel, column].max()))
    return out


def choose(peaks: list[float]) -> tuple[float, float, str]:
    """(threshold, seconds, why) from the validation falls' lying peaks."""
    if len(peaks) < MIN_FALLS:
        why = f"{len(peaks)} falls (fewer than {MIN_FALLS}): defaults"
        return Then.threshold, Then.within, why
    median = float(np.median(peaks))
    threshold = max((g for g in GRID if g <= SHARE * median + 1e-9), default=GRID[0])
    return (
        threshold,
        SECONDS,
        (
            f"lying peaks at {median:.2f} (median) within {HORIZON:g} s of the impact of "
            f"{len(peaks)} falls: the highest of {GRID[0]:g}-{GRID[-1]:g} no more than "
            f"{SHARE:.0%} of it"
        ),
    )


def choose_wait(
    model: Path, spec: HyperframeSpec, videos: tuple[Video, ...], classes: tuple[str, ...]
) -> tuple[HyperframeSpec, dict]:
    """The spec with its (one) wait chosen on ``videos``, and what the report says of it."""
    (rule,) = spec.alert_then
    s = streams(model, videos, classes)
    peaks = lying_peaks(s, rule)
    threshold, within, why = choose(peaks)
    chosen = replace(spec, alert_then=(replace(rule, threshold=threshold, within=within),))
    grid = [(g, count(s, spec, replace(rule, threshold=g, within=within), Options())) for g in GRID]
    return chosen, {
        "rule": f"{rule.cls} then {rule.pose}",
        "threshold": threshold,
        "within": within,
        "why": why,
        "falls": sum(len(st.events[rule.cls]) for st in s),
        "videos": len(s),
        "lying_median": round(float(np.median(peaks)), 4) if peaks else None,
        "grid": [
            {"threshold": g, "within": within, "in_time": c, "false": f} for g, (c, f) in grid
        ],
    }


def other_waits(streams: list[Stream], column: int, cls: str, thresholds, opts: Options):
    """For a class that waits for a pose: ``models.evaluation.events.sweep`` over ``thresholds`` at
    the runtime's k-of-n for every other wait of GRID x WITHIN (the export writes only SECONDS), so
    ``models.evaluate``'s recommended point may change the wait as well as the threshold; for
    any other class, nothing."""
    rule = opts.then_of(cls)
    if rule is None:
        return []
    pairs = [(g, w) for g in GRID for w in WITHIN if (g, w) != (rule.threshold, rule.within)]
    kn = (opts.k, opts.n)
    at = [with_wait(opts, cls, {"threshold": g, "within": w}) for g, w in pairs]
    return [r for o in at for r in sweep(streams, column, cls, thresholds, kn, o)]
