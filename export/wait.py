"""How high a model's fall alert may set its wait for lying (``Then.threshold``), chosen per model.

A model with a ``lying`` class alerts on a fall only once lying follows it (export.checkpoint.
with_then). How high lying scores after a fall depends on the model: trained from scratch about
0.25, from the posture weights about 0.8 (README: Eighth round), so no one value suits both: 0.2
lets the second raise twice the false alarms it needs to, 0.5 makes the first miss most falls.
The export chooses: each validation video with a labelled fall goes through the runtime (the
exported ONNX file: its sampler, backend and activation), and the runtime's own alert logic is
replayed (models.events) with the wait at each value of ``GRID``. The chosen value is the highest
that still alerts in time on at least ``KEEP`` of the falls the lowest one alerts on: a higher
wait turns away more of the stumbles and get-ups that briefly look like lying.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from edge_hf.spec import HyperframeSpec, Then
from models.data import Video
from models.events import Options, Stream, events_of, match, starts

GRID = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
KEEP = 0.9  # of the falls the lowest wait alerts on in time
MIN_FALLS = 8  # fewer validation falls than this say too little: the wait stays at GRID[0]


def segments(labels: tuple[int, ...], classes: tuple[str, ...]) -> tuple[tuple[int, int, str], ...]:
    """A video's per-frame class indices (-1: unlabelled) as (first, last, label) runs."""
    out: list[tuple[int, int, str]] = []
    for f, c in enumerate(labels):
        if c < 0:
            continue
        if out and out[-1][2] == classes[c] and out[-1][1] == f - 1:
            out[-1] = (out[-1][0], f, classes[c])
        else:
            out.append((f, f, classes[c]))
    return tuple(out)


def streams(model: Path, videos: tuple[Video, ...], classes: tuple[str, ...], cls: str):
    """The videos with a labelled ``cls`` run, each scored by the runtime as a Stream."""
    from models.evaluate import score  # the runtime; imported here to keep export light

    out = []
    for v in videos:
        if isinstance(v.labels, int):
            continue  # one label for the clip: no impact frame to measure from
        labels = segments(v.labels, classes)
        events = events_of(list(labels), cls)
        if not events:
            continue
        rt, tap, length = score(model, v.path, Options())
        probs = np.stack(tap.probs) if tap.probs else np.zeros((0, len(rt.spec.classes)))
        out.append(Stream(str(v.path), rt.cameras[0].source.fps, length, np.array(tap.anchors),
                          probs, {cls: events}, labels, classes=rt.spec.classes))  # fmt: skip
    return out


def in_time(s: list[Stream], spec: HyperframeSpec, rule: Then, wait: float, opts: Options) -> int:
    """Falls alerted within ``opts.max_delay`` of their impact with the wait at ``wait``."""
    column, thr = spec.classes.index(rule.cls), spec.thresholds[rule.cls]
    then = replace(rule, threshold=wait)
    caught = 0
    for st in s:
        (alerts,) = starts(st, column, (thr,), opts.k, opts.n, opts.cooldown, then=then)
        delays, _ = match(alerts, st.events[rule.cls], st.fps, opts.match)
        caught += sum(d <= opts.max_delay for d in delays)
    return caught


def choose(caught: dict[float, int], falls: int) -> tuple[float, str]:
    """(the wait, why) from how many falls each wait of GRID alerts on in time."""
    base = caught[GRID[0]]
    if falls < MIN_FALLS:
        return GRID[0], f"{falls} validation falls (fewer than {MIN_FALLS}): kept {GRID[0]}"
    need = math.ceil(KEEP * base)
    best = max(g for g in GRID if caught[g] >= need)
    return best, (
        f"the highest wait alerting in time on at least {KEEP:.0%} of the {base} of {falls} "
        f"validation falls that {GRID[0]} alerts on"
    )


def choose_wait(
    model: Path, spec: HyperframeSpec, videos: tuple[Video, ...], classes: tuple[str, ...]
) -> tuple[HyperframeSpec, dict]:
    """The spec with its (one) wait chosen on ``videos``, and what the report says of it."""
    (rule,) = spec.alert_then
    opts = Options()
    s = streams(model, videos, classes, rule.cls)
    falls = sum(len(st.events[rule.cls]) for st in s)
    caught = {g: in_time(s, spec, rule, g, opts) for g in GRID}
    wait, why = choose(caught, falls)
    chosen = replace(spec, alert_then=(replace(rule, threshold=wait),))
    return chosen, {
        "rule": f"{rule.cls} then {rule.pose} within {rule.within:g} s",
        "threshold": wait,
        "why": why,
        "falls": falls,
        "videos": len(s),
        "in_time": {f"{g:g}": n for g, n in caught.items()},
    }
