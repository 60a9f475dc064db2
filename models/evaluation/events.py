"""Counting alerts against labelled events: which alert starts catch a fall, how late, and
which are false alarms (and what the stream showed when each started). Pure functions over the
scores ``models.evaluate`` records; the runtime's own ``AlertLogic`` decides every start."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from edge_hf.alerts import (
    DEFAULT_CLEAR,
    DEFAULT_COOLDOWN,
    DEFAULT_DOWN_FOR,
    DOWN,
    FAST,
    AlertLogic,
    AlertPolicy,
)
from edge_hf.spec import Then

# the last two for models whose scores saturate (--action-top)
GRID = (
    0.05,
    0.1,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.7,
    0.8,
    0.85,
    0.9,
    0.93,
    0.95,
    0.97,
    0.98,
    0.99,
    0.995,
    0.999,
)
KN = ((1, 1), (2, 3), (2, 2), (3, 5))  # k-of-n drawn in the sweep


@dataclass(frozen=True)
class Options:
    thresholds: tuple[tuple[str, float], ...] = ()  # overrides of the spec's
    k: int = 2
    n: int = 3
    cooldown: float = DEFAULT_COOLDOWN  # the runtime's
    max_delay: float = 1.0  # seconds after the impact: "in time"
    match: float = 5.0  # seconds after the impact: later starts are false alarms
    target: float = 0.5  # false alarms per hour the recommendation may cost
    every: int = 1
    confirm: Path | None = None  # two-stage mode: the confirming model
    screen: tuple[tuple[str, float], ...] = ()  # its screening thresholds
    then: tuple[Then, ...] | None = None  # classes that wait for a pose; None: the model's
    down_for: float = DEFAULT_DOWN_FOR  # seconds down before the down level (the runtime's)

    def then_of(self, cls: str) -> Then | None:
        return next((t for t in self.then or () if t.cls == cls), None)


@dataclass
class Stream:
    """One video's hyperframe scores, as the runtime computed them, and its labelled events."""

    name: str
    fps: float
    length: int  # frames
    anchors: np.ndarray  # [M] newest source frame of each hyperframe
    probs: np.ndarray  # [M, C] activated scores
    events: dict[str, list[tuple[int, int]]]  # class -> (first frame, impact frame)
    labels: tuple[tuple[int, int, str], ...] = ()  # the stream's segments (start, end, label)
    model_s: float = 0.0  # seconds in model calls (both stages)
    stages: tuple[tuple[str, int], ...] = ()  # two-stage mode: screened, confirmed, rejected
    classes: tuple[str, ...] = ()  # the model's, naming the columns of probs


def runs(labels: list[str | None]) -> list[tuple[int, int, str]]:
    """Per-frame labels as (first, last, label) runs; None: an unlabelled frame, in no run."""
    out: list[tuple[int, int, str]] = []
    for f, lab in enumerate(labels):
        if lab is None:
            continue
        if out and out[-1][2] == lab and out[-1][1] == f - 1:
            out[-1] = (out[-1][0], f, lab)
        else:
            out.append((f, f, lab))
    return out


def events_of(labels: list[tuple[int, int, str]], cls: str) -> list[tuple[int, int]]:
    """Runs of frames labelled ``cls`` (adjacent segments merged): (first, impact)."""
    out: list[tuple[int, int]] = []
    for start, end, label in sorted(labels):
        if label != cls:
            continue
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def starts(
    s: Stream,
    column: int,
    thresholds,
    k: int,
    n: int,
    cooldown: float,
    held=None,
    then=None,
    armed: list[dict[int, int]] | None = None,
    level: str = FAST,
    down_for: float = DEFAULT_DOWN_FOR,
    downs: list[list[int]] | None = None,
) -> list[list[int]]:
    """Alert start frames for each threshold, from the runtime's own AlertLogic: one logic with
    one pseudo-class per threshold, each fed the same score (and with ``then``, a Then of the
    class, each waits for the pose's column). ``held`` (a bool array [thresholds, hyperframes]),
    when given, records where each could start no alert (``AlertLogic.holding``); ``armed``
    (one dict per threshold) where each start's k of n began (``Event.first``). ``level``: the
    starts of the class's own alert (FAST) or of its down level (DOWN, after ``down_for``
    seconds down); ``downs`` (a list per threshold), when given, gets the down level's starts
    of the same pass."""
    names = tuple(f"t{i}" for i in range(len(thresholds)))
    rules = (
        () if then is None else tuple(Then(c, "pose", then.threshold, then.within) for c in names)
    )
    policy = AlertPolicy(
        tuple(zip(names, thresholds, strict=True)), k, n, cooldown, rules, down_for
    )
    logic = AlertLogic(s.name, (*names, "pose"), policy, s.fps)
    out: list[list[int]] = [[] for _ in thresholds]
    index = {name: i for i, name in enumerate(names)}
    tiled = np.zeros(len(names) + 1, np.float32)
    pose = s.probs[:, s.classes.index(then.pose)] if then else np.zeros(len(s.anchors), np.float32)
    for m, (frame, p, q) in enumerate(
        zip(s.anchors.tolist(), s.probs[:, column].tolist(), pose.tolist(), strict=True)
    ):
        if held is not None:
            held[:, m] = [logic.holding(c, frame) for c in range(len(names))]
        tiled.fill(p)
        tiled[-1] = q
        for ev in logic.update(tiled, frame, 0.0):
            if ev.kind != "start":
                continue
            if ev.level == level:
                out[index[ev.label]].append(frame)
                if armed is not None:
                    armed[index[ev.label]][frame] = ev.first
            elif downs is not None:
                downs[index[ev.label]].append(frame)
    return out


def assign(alerts: list[int], events: list[tuple[int, int]], fps: float, late: float):
    """({event index: the alert start that caught it}, the frames where false alarms started):
    each start catches the first uncaught event it falls in (first frame to ``late`` s after)."""
    caught: dict[int, int] = {}
    false: list[int] = []
    for f in alerts:
        hit = next(
            (j for j, (a, b) in enumerate(events) if j not in caught and a <= f <= b + late * fps),
            None,
        )
        if hit is None:
            false.append(f)
        else:
            caught[hit] = f
    return caught, false


def match(alerts: list[int], events: list[tuple[int, int]], fps: float, late: float):
    """(delays in seconds of the caught events, the frames where false alarms started)."""
    caught, false = assign(alerts, events, fps, late)
    return [(f - events[j][1]) / fps for j, f in caught.items()], false


MISSES = (
    "score below the threshold",
    "held by an earlier alert or its cooldown",
    "not k of n in time",
    "caught late",
    "no pose after it in time",
)


def outcomes(streams: list[Stream], column: int, cls: str, thr: float, kn, opts: Options) -> dict:
    """What happened to each labelled event at one operating point (``events``: its stream, first
    frame, impact, delay in seconds or None, and why it was not caught in time or None) and where
    each false alarm started (``false_alarms``: stream, frame, the label it is counted by), to look
    the misses up in the videos. Replays the runtime's AlertLogic; an event not caught in time is
    told, between its first frame and the deadline (MISSES, in order): its score never reached
    ``thr``; it did, but never on k of n hyperframes; it did on k of n, but only while an alert (a
    false alarm, an earlier event) was on or cooling down; an alert started after the deadline; or
    (a class that waits for a pose: ``Options.then``) its k of n was free to start one, and the
    pose did not follow in time. Each event also says what the model called it from the impact
    to the deadline (``after``: ``called``)."""
    k, n = kn
    then = opts.then_of(cls)
    events: list[dict] = []
    false: list[dict] = []
    for s in streams:
        held, armed = np.zeros((1, len(s.anchors)), bool), [{}]
        (alerts,) = starts(s, column, (thr,), k, n, opts.cooldown, held, then, armed)
        caught, wrong = assign(alerts, s.events[cls], s.fps, opts.match)
        false += [
            {"stream": s.name, "frame": f, "label": false_label(s, f, armed[0], then)}
            for f in wrong
        ]
        hits = s.probs[:, column] >= thr
        kofn = np.convolve(hits, np.ones(n, int))[: len(hits)] >= k  # k of the last n
        deadline = round(opts.max_delay * s.fps)
        for j, (first, impact) in enumerate(s.events[cls]):
            sel = (s.anchors >= first) & (s.anchors <= impact + deadline)
            delay = (caught[j] - impact) / s.fps if j in caught else None
            if j in caught and caught[j] <= impact + deadline:
                why = None
            elif j in caught:
                why = MISSES[3]
            elif not (sel & hits).any():
                why = MISSES[0]
            elif not (sel & kofn).any():
                why = MISSES[2]
            elif then is None or not (sel & kofn & ~held[0]).any():
                why = MISSES[1]  # without a wait, a free k of n that started no alert for
                # this event started one that an earlier event, still in its match time, took
            else:
                why = MISSES[4]
            events.append(
                {
                    "stream": s.name,
                    "first": first,
                    "impact": impact,
                    "delay": delay,
                    "missed_because": why,
                    "after": called(s, impact, deadline),
                }
            )
    return {"events": events, "false_alarms": false}


def called(s: Stream, start: int, frames: int) -> str | None:
    """What the model called the scene from frame ``start`` to ``frames`` after it: the class
    with the highest mean score over those hyperframes (after a fall: the pose it saw, or did
    not). None when no hyperframe falls there or the stream has no class names."""
    sel = (s.anchors >= start) & (s.anchors <= start + frames)
    if not sel.any() or not s.classes:
        return None
    return s.classes[int(s.probs[sel].mean(0).argmax())]


def called_instead(outcome: dict) -> dict[str, int]:
    """For the events missed because the pose did not follow in time (``MISSES[4]``): how many
    the model called each class after the impact, most first."""
    tally = Counter(e["after"] for e in outcome["events"] if e["missed_because"] == MISSES[4])
    return {c: n for c, n in tally.most_common() if c is not None}


def misses(outcome: dict) -> dict:
    """How many of ``outcomes``' events not caught in time were missed for each reason."""
    out = dict.fromkeys(MISSES, 0)
    for e in outcome["events"]:
        if e["missed_because"] is not None:
            out[e["missed_because"]] += 1
    return out


def by_fact(outcome: dict, streams: list[Stream], fact: dict[str, str]) -> dict:
    """``outcomes``' counts per value of a fact about the videos (``fact``: video -> value):
    videos, hours, events, events caught in time, false alarms and false alarms per hour."""
    out: dict[str, dict] = {}
    for s in sorted(streams, key=lambda s: fact[s.name]):
        row = out.setdefault(
            fact[s.name], dict.fromkeys(("videos", "hours", "events", "in_time", "false_alarms"), 0)
        )
        row["videos"] += 1
        row["hours"] += s.length / s.fps / 3600.0
    for e in outcome["events"]:
        out[fact[e["stream"]]]["events"] += 1
        out[fact[e["stream"]]]["in_time"] += e["missed_because"] is None
    for f in outcome["false_alarms"]:
        out[fact[f["stream"]]]["false_alarms"] += 1
    for row in out.values():
        row["false_per_hour"] = row["false_alarms"] / row["hours"] if row["hours"] else 0.0
    return out


def point(streams: list[Stream], column: int, cls: str, thr: float, kn, opts: Options) -> dict:
    return sweep(streams, column, cls, (thr,), kn, opts)[0]


def sweep(streams, column: int, cls: str, thresholds, kn, opts: Options) -> list[dict]:
    """One row per threshold at k-of-n ``kn``: counts over every stream (``wait``: the pose
    the class waits for, its threshold and seconds, or None)."""
    k, n = kn
    hours = sum(s.length / s.fps for s in streams) / 3600.0
    delays: list[list[float]] = [[] for _ in thresholds]
    false: list[Counter] = [Counter() for _ in thresholds]  # label at the start -> count
    total, then = 0, opts.then_of(cls)
    tallies = [_DownTally() for _ in thresholds]
    for s in streams:
        total += len(s.events[cls])
        armed: list[dict[int, int]] = [{} for _ in thresholds]
        downs: list[list[int]] = [[] for _ in thresholds]
        found = starts(
            s,
            column,
            thresholds,
            k,
            n,
            opts.cooldown,
            then=then,
            armed=armed,
            down_for=opts.down_for,
            downs=downs,
        )
        for i, alerts in enumerate(found):
            d, f = match(alerts, s.events[cls], s.fps, opts.match)
            delays[i] += d
            # a class that waits for a pose: named by the move that armed it, not the stillness
            false[i].update(false_label(s, x, armed[i], then) for x in f)
            if then is not None:
                tallies[i].add(s, downs[i], cls, then.pose, opts.down_for)
    wait = None if then is None else {"threshold": then.threshold, "within": then.within}
    on = then is not None and opts.down_for > 0
    return [
        {
            **_row(thr, kn, total, d, f, hours, opts),
            "wait": wait,
            "down": t.row(opts.down_for, opts.max_delay, hours) if on else None,
        }
        for thr, d, f, t in zip(thresholds, delays, false, tallies, strict=True)
    ]


def down_times(s: Stream, cls: str, pose: str) -> list[tuple[int, int, bool]]:
    """Each labelled event of ``cls``: (its impact, the frame the person was up again: the first
    after the impact labelled neither ``cls`` nor ``pose``, whether they were still down when the
    stream ended (then that frame is its end))."""
    out = []
    for _, impact in s.events.get(cls, []):
        up = impact + 1
        for a, b, lab in sorted(s.labels):
            if b < up:
                continue
            if a > up or lab not in (cls, pose):
                break
            up = b + 1
        out.append((impact, min(up, s.length), up >= s.length))
    return out


def down_point(streams, column: int, cls: str, thr: float, kn, opts: Options) -> dict | None:
    """The down level at one operating point (None: the class waits for no pose, or the level
    is off): of the events whose person stayed down at least ``down_for`` seconds (to the end of
    the stream counts when that is long enough), how many its alert reached within
    ``down_for + max_delay`` of the impact, and its delays; how many it raised for a person who
    got up sooner; and its false alarms (starts while no labelled event's person was down) per
    hour, by the label where each started."""
    then, wait = opts.then_of(cls), opts.down_for
    if then is None or wait <= 0:
        return None
    tally = _DownTally()
    for s in streams:
        (alerts,) = starts(
            s, column, (thr,), *kn, opts.cooldown, then=then, level=DOWN, down_for=wait
        )
        tally.add(s, alerts, cls, then.pose, wait)
    hours = sum(s.length / s.fps for s in streams) / 3600.0
    return tally.row(wait, opts.max_delay, hours)


@dataclass
class _DownTally:
    """The down level's counts over streams (``down_point``)."""

    stayed: int = 0
    got_up: int = 0
    got_up_alerted: int = 0
    delays: list[float] = field(default_factory=list)
    false: Counter = field(default_factory=Counter)

    def add(self, s: Stream, alerts: list[int], cls: str, pose: str, wait: float) -> None:
        """One stream's down-level starts ``alerts``, matched to its events' time down."""
        clear = round(DEFAULT_CLEAR * s.fps)
        downs = down_times(s, cls, pose)
        used: set[int] = set()
        for f in alerts:
            j = next(
                (j for j, (i, up, _) in enumerate(downs) if j not in used and i <= f <= up + clear),
                None,
            )
            if j is None:
                self.false[label_at(s.labels, f)] += 1
                continue
            used.add(j)
            impact, up, _ = downs[j]
            if (up - impact) / s.fps >= wait:
                self.delays.append((f - impact) / s.fps)
            else:
                self.got_up_alerted += 1
        for impact, up, ended in downs:
            long_enough = (up - impact) / s.fps >= wait
            self.stayed += long_enough
            self.got_up += not long_enough and not ended  # cut short by the stream's end: neither

    def row(self, wait: float, max_delay: float, hours: float) -> dict:
        in_time = sum(d <= wait + max_delay for d in self.delays)
        n_false = sum(self.false.values())
        d = self.delays
        return {
            "down_for": wait,
            "stayed_down": self.stayed,
            "got_up_sooner": self.got_up,
            "alerted": len(d),
            "in_time": in_time,
            "recall": in_time / self.stayed if self.stayed else 0.0,
            "delay_median": float(np.median(d)) if d else None,
            "delay_p95": float(np.percentile(d, 95)) if d else None,
            "got_up_alerted": self.got_up_alerted,
            "false_alarms": n_false,
            "false_per_hour": n_false / hours if hours else 0.0,
            "false_by_label": dict(self.false.most_common()),
        }


def peaks(streams: list[Stream], column: int, cls: str, late: float) -> list[dict]:
    """Each labelled event's peak score: the highest the model gave from its first frame to
    ``late`` seconds after the impact (what any threshold could have caught in time)."""
    out = []
    for s in streams:
        for first, impact in s.events.get(cls, []):
            sel = (s.anchors >= first) & (s.anchors <= impact + round(late * s.fps))
            peak = float(s.probs[sel, column].max()) if sel.any() else 0.0
            out.append({"stream": s.name, "first": first, "impact": impact, "peak": round(peak, 4)})
    return out


def false_label(s: Stream, frame: int, armed: dict[int, int], then) -> str:
    """What a false alarm started at ``frame`` is counted by: the label there, or for a class
    that waits for a pose, the label where its k of n began (the move that armed it)."""
    return label_at(s.labels, armed[frame] if then else frame)


def label_at(labels: tuple[tuple[int, int, str], ...], frame: int) -> str:
    """The label of ``frame`` in the segments, or "unlabelled"."""
    return next((lab for a, b, lab in labels if a <= frame <= b), "unlabelled")


def _row(thr, kn, total: int, delays: list[float], by: Counter, hours: float, opts) -> dict:
    in_time, false = sum(d <= opts.max_delay for d in delays), sum(by.values())
    return {
        "threshold": float(thr),
        "k": kn[0],
        "n": kn[1],
        "events": total,
        "caught": len(delays),
        "in_time": in_time,
        "missed": total - len(delays),
        "recall": in_time / total if total else 0.0,
        "false_alarms": false,
        "false_per_hour": false / hours if hours else 0.0,
        "delay_median": float(np.median(delays)) if delays else None,
        "delay_p95": float(np.percentile(delays, 95)) if delays else None,
        "false_by_label": dict(by.most_common()),
    }


def with_wait(opts: Options, cls: str, wait: dict | None) -> Options:
    """``opts`` with class ``cls``'s pose rule at ``wait`` (a sweep row's: threshold, within)."""
    rule = opts.then_of(cls)
    if rule is None or wait is None:
        return opts
    other = tuple(t for t in opts.then or () if t.cls != cls)
    return replace(opts, then=(*other, replace(rule, **wait)))


def recommend(rows: list[dict], target: float) -> dict:
    ok = [r for r in rows if r["false_per_hour"] <= target]
    if ok:
        best = max(ok, key=lambda r: (r["recall"], -r["false_per_hour"], r["threshold"]))
        return {**best, "meets_target": True}
    best = min(rows, key=lambda r: (r["false_per_hour"], -r["recall"], -r["threshold"]))
    return {**best, "meets_target": False}
