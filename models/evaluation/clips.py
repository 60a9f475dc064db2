"""What the exported model's alerts do on the validation clips labelled whole, before any stream.

A folder of clips (a class per folder) has no long labelled streams to count false alarms per hour
on. Its validation clips still say something: through the runtime (the shipped file, its sampler,
backend and the runtime's own alert logic at the spec's k of n and wait), how many clips of each
class alert at the spec's threshold, how many of the alert class's clips alert when played
backwards (a fall played backwards is someone getting up: models/backwards.py), and the lowest
threshold of ``models.evaluation.events.GRID`` at which no clip of another class and
no reversed alert clip alerts, with the alert clips that still alert there. In the second world
those quiet thresholds (0.85-0.95 over four seeds) cut the false alarms an hour on streams by 1.7
to 6.3 times against 0.8, and caught fewer falls (docs/results.md). It is a warning, not a choice: the export writes no threshold from it (``--threshold``
does).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import cv2

from edge_hf.spec import HyperframeSpec, Then
from models.data import Video
from models.errors import BadData
from models.evaluation.events import GRID, Options, Stream, starts

PER_CLASS = 30  # validation clips of a class the check scores (evenly spaced)
TOTAL = 300  # and in all (a dataset of many classes: fewer of each)


def reversed_copy(src: Path, dst: Path) -> Path:
    """``src`` with its frames in reverse order, written losslessly enough (MJPEG, quality 95)
    at the same rate to ``dst``."""
    cap = cv2.VideoCapture(str(src))
    fps, frames = cap.get(cv2.CAP_PROP_FPS), []
    while (got := cap.read())[0]:
        frames.append(got[1])
    cap.release()
    h, w = frames[0].shape[:2]
    out = cv2.VideoWriter(str(dst), cv2.VideoWriter_fourcc(*"MJPG"), fps, (w, h))
    out.set(cv2.VIDEOWRITER_PROP_QUALITY, 95)
    for f in reversed(frames):
        out.write(f)
    out.release()
    return dst


def alerting(s: Stream, cls: str, thresholds, then: Then | None, kn: tuple[int, int]) -> list[bool]:
    """For each of ``thresholds``: does any alert of ``cls`` start in the clip (the runtime's
    AlertLogic replayed, as models.evaluate does)?"""
    column = s.classes.index(cls)
    found = starts(s, column, thresholds, *kn, Options().cooldown, then=then)
    return [bool(a) for a in found]


def summarise(
    cls: str,
    thresholds: tuple[float, ...],
    threshold: float,
    kn: tuple[int, int],
    clips: list[tuple[str, list[bool]]],
    backwards: list[list[bool]],
) -> dict:
    """The report's entry for one alert class from each clip's (label, alerts at each of
    ``thresholds``), ``threshold`` (the spec's) one of them."""
    at = thresholds.index(threshold)
    counts: dict[str, dict[str, int]] = {}
    for label, a in clips:
        c = counts.setdefault(label, {"alert": 0, "of": 0})
        c["alert"] += a[at]
        c["of"] += 1
    others = [a for label, a in clips if label != cls] + backwards
    quiet = next((i for i in range(len(thresholds)) if not any(a[i] for a in others)), None)
    own = [a for label, a in clips if label == cls]
    return {
        "threshold": threshold,
        "k_of_n": list(kn),
        "clips": dict(sorted(counts.items())),
        "backwards": {"alert": sum(a[at] for a in backwards), "of": len(backwards)},
        "quiet": None
        if quiet is None
        else {"threshold": thresholds[quiet], "alert": sum(a[quiet] for a in own), "of": len(own)},
    }


def sample(clips: list[Video]) -> list[Video]:
    """At most ``PER_CLASS`` clips of each class, and ``TOTAL`` in all, evenly spaced in each
    class's list: each costs a runtime start and its frames (about 0.8 s for a clip of 100 frames here)."""
    by: dict[int, list[Video]] = {}
    for v in clips:
        by.setdefault(int(v.labels), []).append(v)
    per = min(PER_CLASS, max(1, TOTAL // max(1, len(by))))
    picks = [
        vs[round(i * len(vs) / min(per, len(vs)))]
        for vs in by.values()
        for i in range(min(per, len(vs)))
    ]
    return sorted(picks, key=lambda v: str(v.path))


def _scored(model: Path, video: Path) -> Stream | None:
    """``video`` through the runtime; None when it holds less than one hyperframe or cannot be
    read to the end (the trainer skips such clips too; the runtime has said why on stderr)."""
    from models.evaluation.streams import scored  # the runtime; imported here to keep export light

    try:
        return scored(model, video, video.name, [], Options())[0]
    except BadData:
        return None


def check(
    model: Path, spec: HyperframeSpec, videos: tuple[Video, ...], classes: tuple[str, ...]
) -> dict | None:
    """Every alert class's entry (``summarise``, with the clips left out as unreadable or too
    short) from the clips of ``videos`` labelled whole, scored by the runtime with ``model``;
    None when there are none or nothing alerts."""
    whole = sample([v for v in videos if isinstance(v.labels, int)])
    if not whole or not spec.alert_classes:
        return None
    thens = {t.cls: t for t in spec.alert_then}
    kn = (Options().k, Options().n)  # the runtime's
    runs = [(v, classes[v.labels], _scored(model, v.path)) for v in whole]
    streams = [(v, label, s) for v, label, s in runs if s is not None]
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="edge-hf-clips-") as tmp:
        for cls, threshold in spec.alert_classes:
            grid, then = tuple(sorted({*GRID, threshold})), thens.get(cls)
            clips = [(label, alerting(s, cls, grid, then, kn)) for _, label, s in streams]
            back = []
            for i, (v, _, _) in enumerate(w for w in streams if w[1] == cls):
                s = _scored(model, reversed_copy(v.path, Path(tmp) / f"{i}.avi"))
                back += [alerting(s, cls, grid, then, kn)] if s is not None else []
            out[cls] = summarise(cls, grid, threshold, kn, clips, back)
            out[cls]["left_out"] = len(whole) - len(streams)
    return out


def lines(report: dict | None) -> list[str]:
    """The model card's paragraph: where the alert already sounds on validation clips."""
    if not report:
        return []
    out = []
    for cls, r in report.items():
        k, n = r["k_of_n"]
        others = {lab: c for lab, c in r["clips"].items() if lab != cls}
        false = sum(c["alert"] for c in others.values())
        own = r["clips"].get(cls, {"alert": 0, "of": 0})
        named = ", ".join(f"{lab} {c['alert']}" for lab, c in others.items() if c["alert"])
        b = r["backwards"]
        text = (
            f"On the validation clips at {cls} ≥ {r['threshold']:g} ({k} of {n}), "
            f"{own['alert']} of {own['of']} {cls} clips alert; so do {false} of "
            f"{sum(c['of'] for c in others.values())} clips of other classes"
            f"{f' ({named})' if named else ''} and {b['alert']} of the {b['of']} {cls} clips "
            "played backwards (as someone getting up)."
        )
        if own["alert"] * 2 < own["of"]:
            text += f" Fewer than half of the {cls} clips alert: expect most {cls}s to be missed."
        if r.get("left_out"):
            text += f" {r['left_out']} clip(s) left out: shorter than one hyperframe or unreadable."
        q = r["quiet"]
        if q is None:
            text += (
                " No threshold keeps all of those quiet: expect false alarms on streams and "
                "measure them (models.evaluate) before deploying."
            )
        elif q["threshold"] > r["threshold"]:
            text += (
                f" The lowest threshold at which none of those alerts is {q['threshold']:g}, "
                f"where {q['alert']} of {q['of']} {cls} clips still do: measure both points "
                f"on streams (models.evaluate) and set one with --threshold {cls}=P."
            )
        out += ["", text]
    return out
