"""Turning per-hyperframe scores into alert events: threshold, k-of-n hysteresis, cooldown.

A class *starts* an event when at least ``k`` of its last ``n`` scores reach its threshold, and
*ends* it when at least ``k`` of the last ``n`` are below (so one noisy frame neither raises nor
clears an alert). After an end, the class stays quiet for ``cooldown`` seconds of *video*
(frames / fps), so a file processed faster than real time behaves as it would live (a class
that waits for a pose, below, has no cooldown: its event ends only after the pose has been gone
for ``clear`` seconds, and a new one needs a new fall).

A class may also need what comes *after* it (``Then``): a fall is followed by lying on the floor,
a stumble, a pick-up or a get-up are not. Its k of n then only arms it, and the alert starts once
the pose's score reaches its threshold on k of the hyperframes that follow, within ``within``
seconds of the last arming hit; otherwise it lapses, with no cooldown.

Such an event lasts as long as the person is *down*: it stays open while the pose is seen and
ends once it has not been for ``clear`` seconds (they got up, left the picture, or no one lies
there any more). It carries ``down_for``: the seconds from the impact (the first hit of the
class's k of n) to the newest hyperframe showing the pose. Once ``down_for`` reaches
``down_for`` seconds a second, separate alert starts: the *down* level (``level="down"``, its
own id, its own snapshot, entity ``<class>_down`` in the sinks), re-alarmed every ``realarm``
seconds while it lasts, and ended with the event. A person who gets up sooner never raises it:
``down_for`` stops growing when the pose is no longer seen.

Every open event also sends an ``update`` every ``UPDATE_EVERY`` seconds of video (its score
and ``down_for`` now), so a consumer sees it is still on without a flood of messages.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from edge_hf.errors import UsageError
from edge_hf.spec import Then

# Seconds of video a class stays quiet after an event ends: long enough that one fall never
# raises two alerts, short enough that a second fall soon after (one getting up and falling
# again) raises its own (docs/results.md).
DEFAULT_COOLDOWN = 5.0
# Seconds without the pose that end a down event: longer than the pose's dips while someone
# lies still (a limb across the body, a poor frame), shorter than a caregiver would wait.
DEFAULT_CLEAR = 3.0
# Seconds down before the down level alerts (issue 60: "fell and has not got up").
DEFAULT_DOWN_FOR = 10.0
UPDATE_EVERY = 5.0  # seconds of video between an open event's updates
FAST, DOWN = "fast", "down"  # the alert levels


@dataclass(frozen=True)
class AlertPolicy:
    thresholds: tuple[tuple[str, float], ...]  # alert class -> threshold
    k: int = 2
    n: int = 3
    cooldown: float = DEFAULT_COOLDOWN  # seconds
    then: tuple[Then, ...] = ()
    down_for: float = DEFAULT_DOWN_FOR  # seconds down before the down level; 0: no down level
    realarm: float = 0.0  # seconds between the down level's re-alarms; 0: none
    clear: float = DEFAULT_CLEAR  # seconds without the pose that end a down event

    def __post_init__(self) -> None:
        if not 1 <= self.k <= self.n:
            raise UsageError(f"--k-of-n must satisfy 1 <= k <= n, found {self.k}/{self.n}")
        for name, flag in (("cooldown", "--cooldown"), ("down_for", "--down-for")):
            if not 0 <= getattr(self, name) <= 86_400:  # also refuses inf and nan
                raise UsageError(f"{flag} must be 0 to 86400 seconds, found {getattr(self, name)}")
        if not (self.realarm == 0 or 10 <= self.realarm <= 86_400):
            raise UsageError(
                f"--re-alarm must be 0 (none) or 10 to 86400 seconds, found {self.realarm}"
            )
        if not 0 < self.clear <= 600:
            raise ValueError(f"clear: expected 0 < seconds <= 600, found {self.clear}")
        for t in self.then:
            if (problem := t.problem()) is not None:
                raise UsageError(problem)


def utc_time(t: float) -> str:
    """A Unix time as events show it: ISO 8601 in UTC, to the millisecond, ``Z``."""
    return (
        datetime.fromtimestamp(t, timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def down_key(label: str) -> str:
    """The down level's name in the sinks (its state topic, entity, metrics label)."""
    return f"{label}_down"


@dataclass(frozen=True)
class Event:
    kind: str  # "start" | "update" | "realarm" (the down level) | "end"
    id: str
    camera: str
    label: str
    score: float  # the score of the hyperframe that caused this event
    peak: float  # the highest score of the event so far
    frame: int  # source frame index of the newest frame of that hyperframe
    time: float  # Unix time that frame was grabbed
    snapshot: str | None = None  # with --snapshots: the JPEG's file name (edge_hf.snapshots)
    small: bytes | None = field(default=None, repr=False, compare=False)  # its small JPEG
    screen: float | None = None  # two-stage mode: the screening model's score; `score` confirms
    # start: `frame` of the first hyperframe of the k-of-n run that started it (its oldest hit
    # among the last n; the snapshot is this hyperframe's centre frame); end: -1
    first: int = field(default=-1, compare=False)
    level: str = FAST  # FAST: the class's own alert; DOWN: its person still down (escalation)
    down_for: float | None = None  # a class that waits for a pose: seconds down so far

    @property
    def key(self) -> str:
        """What the sinks name this alert by: the class, or ``<class>_down`` for its down level."""
        return self.label if self.level == FAST else down_key(self.label)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "event": self.kind,
            "id": self.id,
            "camera": self.camera,
            "label": self.label,
            "level": self.level,
            "score": round(self.score, 4),
            "peak": round(self.peak, 4),
            "frame": self.frame,
            "time": utc_time(self.time),
        }
        if self.down_for is not None:
            out["down_for"] = round(self.down_for, 1)
        if self.screen is not None:
            out["screen_score"] = round(self.screen, 4)
        if self.snapshot is not None:
            out["snapshot"] = {"file": self.snapshot, "url": f"/snapshots/{self.snapshot}"}
        return out


_NONE: tuple[Event, ...] = ()


class AlertLogic:
    """Per-camera alert state. ``update`` is called once per hyperframe and returns ``()``
    unless an event starts, is updated, re-alarms or ends."""

    def __init__(
        self, camera: str, classes: tuple[str, ...], policy: AlertPolicy, fps: float
    ) -> None:
        self.camera, self.policy = camera, policy
        self.labels = [name for name, _ in policy.thresholds]
        self._index = np.array([classes.index(c) for c in self.labels], np.intp)
        self._thr = np.array([t for _, t in policy.thresholds], np.float32)
        self._scores = np.zeros(len(self.labels), np.float32)
        self._hits = np.zeros((len(self.labels), policy.n), np.bool_)
        self._window = np.zeros((len(self.labels), policy.n), np.float32)  # their scores
        self._frames = np.zeros(policy.n, np.int64)  # each hit column's `frame`
        self._pos = 0
        self._active: list[Event | None] = [None] * len(self.labels)
        self._quiet_until = [0] * len(self.labels)  # frame index
        self._then = _ThenState(classes, self.labels, policy)
        self.fps = fps
        self._impact = [-1] * len(self.labels)  # the open event's first frame (its impact)
        self._seen = [-1] * len(self.labels)  # the newest frame that showed its pose
        self._next = [0] * len(self.labels)  # the frame of its next update
        self._down: list[Event | None] = [None] * len(self.labels)  # its down level, if on
        self._next_realarm = [0] * len(self.labels)

    @property
    def fps(self) -> float:
        return self._fps

    @fps.setter
    def fps(self, fps: float) -> None:
        """The source's frame rate (it may change when a camera reopens): every time in seconds
        becomes frames of it."""
        self._fps, policy = fps, self.policy
        frames = lambda seconds: max(1, round(seconds * fps))  # noqa: E731
        self._every, self._clear = frames(UPDATE_EVERY), frames(policy.clear)
        self._down_after = frames(policy.down_for) if policy.down_for > 0 else -1
        self._realarm = frames(policy.realarm) if policy.realarm > 0 else -1
        self._then.retime(fps)

    def update(
        self, probs: np.ndarray, frame: int, t: float, screen: np.ndarray | None = None
    ) -> tuple[Event, ...]:
        """``screen`` (two-stage mode): the screening model's scores of this hyperframe, which
        the events it starts carry beside ``probs``'s (there the alert classes' are the
        confirming model's, the others the screen's: edge_hf.twostage)."""
        np.take(probs, self._index, out=self._scores)
        np.greater_equal(self._scores, self._thr, out=self._hits[:, self._pos])
        self._window[:, self._pos] = self._scores
        self._frames[self._pos] = frame
        self._pos = (self._pos + 1) % self.policy.n  # now the oldest column
        events = _NONE
        k, n = self.policy.k, self.policy.n
        for c in range(len(self.labels)):
            hits = int(np.count_nonzero(self._hits[c]))
            score = float(self._scores[c])
            active = self._active[c]
            pose = self._then.pose[c]
            if active is None:
                hit = None
                if hits >= k and frame >= self._quiet_until[c]:  # peak: at least the threshold
                    hit = (score, float(self._window[c].max()), self._first_hit(c))
                if pose >= 0:  # it waits for its pose
                    hit = self._then.follows(c, float(probs[pose]), frame, hit)
                if hit is not None:
                    events += (self._start(c, hit, frame, t, screen),)
            elif pose >= 0:  # a down event: open while the pose is seen
                seen = float(probs[pose])
                if seen >= self._then.thr[c]:
                    self._seen[c] = frame
                if frame - self._seen[c] >= self._clear:
                    events += self._end(c, score, frame, t)
                else:
                    events += self._while_open(c, score, seen, frame, t)
            elif n - hits >= k:
                events += self._end(c, score, frame, t)
            else:
                events += self._while_open(c, score, 0.0, frame, t)
        return events

    def _start(self, c: int, hit, frame: int, t: float, screen) -> Event:
        waits = self._then.pose[c] >= 0
        self._impact[c], self._seen[c], self._next[c] = hit[2], frame, frame + self._every
        ev = Event(
            "start",
            str(uuid.uuid4()),
            self.camera,
            self.labels[c],
            hit[0],
            hit[1],
            frame,
            t,
            screen=None if screen is None else float(screen[self._index[c]]),
            first=hit[2],
            down_for=self._down_seconds(c) if waits else None,
        )
        self._active[c] = ev
        return ev

    def _down_seconds(self, c: int) -> float:
        return (self._seen[c] - self._impact[c]) / self.fps

    def _while_open(
        self, c: int, score: float, seen: float, frame: int, t: float
    ) -> tuple[Event, ...]:
        """An open event's peak, its down level's start and re-alarms, its periodic update."""
        active = self._active[c]
        if score > active.peak:
            active = self._active[c] = replace(active, peak=score)
        out = _NONE
        waits = self._then.pose[c] >= 0
        down_for = self._down_seconds(c) if waits else None
        if waits and self._down_after > 0:
            down = self._down[c]
            if down is None and self._seen[c] - self._impact[c] >= self._down_after:
                down = Event(
                    "start",
                    str(uuid.uuid4()),
                    self.camera,
                    active.label,
                    seen,
                    seen,
                    frame,
                    t,
                    first=frame,  # its snapshot: the person on the floor now
                    level=DOWN,
                    down_for=down_for,
                )
                self._down[c], self._next_realarm[c] = down, frame + self._realarm
                out += (down,)
            elif down is not None and self._realarm > 0 and frame >= self._next_realarm[c]:
                self._next_realarm[c] = frame + self._realarm
                out += (
                    replace(
                        down,
                        kind="realarm",
                        score=seen,
                        frame=frame,
                        time=t,
                        first=frame,
                        down_for=down_for,
                    ),
                )
        if frame >= self._next[c]:
            self._next[c] = frame + self._every
            out += (
                replace(active, kind="update", score=score, frame=frame, time=t, down_for=down_for),
            )
        return out

    @property
    def keys(self) -> tuple[str, ...]:
        """What this camera's alerts are named by in the sinks: each class, and after a class
        that waits for a pose its down level (``<class>_down``) unless that is off."""
        out: list[str] = []
        for c, label in enumerate(self.labels):
            out.append(label)
            if self._then.pose[c] >= 0 and self._down_after > 0:
                out.append(down_key(label))
        return tuple(out)

    @property
    def waiting_classes(self) -> tuple[int, ...]:
        """The classes (indices into ``labels``) that wait for a pose after their k of n."""
        return tuple(c for c, pose in enumerate(self._then.pose) if pose >= 0)

    def armed_first(self, c: int) -> int:
        """While class ``c`` is armed and waits for its pose: the ``first`` its start will carry
        (its snapshot's hyperframe); else -1."""
        armed = self._then.armed[c]
        return -1 if armed is None else armed[2]

    def holding(self, c: int, frame: int) -> bool:
        """Whether class ``c`` can start no alert at ``frame``: one is on, or its cooldown runs."""
        return self._active[c] is not None or frame < self._quiet_until[c]

    def _first_hit(self, c: int) -> int:
        """The `frame` of class ``c``'s oldest hit among the last n hyperframes (at a start)."""
        n = self.policy.n
        oldest = next(j for j in range(n) if self._hits[c, (self._pos + j) % n])
        return int(self._frames[(self._pos + oldest) % n])

    def _end(self, c: int, score: float, frame: int, t: float) -> tuple[Event, ...]:
        """End class ``c``'s event (its down level first, if on)."""
        active = self._active[c]
        waits = self._then.pose[c] >= 0
        down_for = self._down_seconds(c) if waits else None
        self._active[c] = None
        if not waits:  # a down event ended `clear` seconds after its person got up: quiet enough
            self._quiet_until[c] = frame + round(self.policy.cooldown * self.fps)
        out = _NONE
        if (down := self._down[c]) is not None:
            self._down[c] = None
            out += (
                replace(
                    down, kind="end", score=0.0, frame=frame, time=t, first=-1, down_for=down_for
                ),
            )
        end = Event(
            "end",
            active.id,
            self.camera,
            active.label,
            score,
            max(active.peak, score),
            frame,
            t,
            screen=active.screen,
            down_for=down_for,
        )
        return (*out, end)

    def close(self, frame: int, t: float) -> tuple[Event, ...]:
        """End every open event (shutdown or end of stream), so no start is left dangling."""
        out = _NONE
        for c, a in enumerate(self._active):
            if a is not None:
                out += self._end(c, 0.0, frame, t)
        return out


class _ThenState:
    """Per alert class with a ``Then``: armed until which frame, the hit that armed it (score,
    peak, first frame) and its pose's hits since (a ring of n)."""

    def __init__(self, classes, labels: list[str], policy: AlertPolicy) -> None:
        rules = {t.cls: t for t in policy.then}  # their classes checked: runtime.alert_policy
        self.rule = [rules.get(c) for c in labels]
        self.pose = [classes.index(r.pose) if r else -1 for r in self.rule]
        self.thr = [r.threshold if r else 1.0 for r in self.rule]
        self.span = [0] * len(labels)
        self.k, self.n = policy.k, policy.n
        self.until = [-1] * len(labels)  # armed while frame <= until
        self.hits = np.zeros((len(labels), policy.n), np.bool_)
        self.count = [0] * len(labels)  # pose hyperframes seen since arming
        self.armed: list[tuple[float, float, int] | None] = [None] * len(labels)

    def retime(self, fps: float) -> None:
        """Each rule's ``within`` in frames at ``fps``."""
        self.span = [round(r.within * fps) if r else 0 for r in self.rule]

    def follows(self, c: int, pose: float, frame: int, hit):
        """The hit that starts class ``c``'s alert at this hyperframe, or None. ``hit``: its own
        k of n just now, which arms it (or re-arms it: the window runs from the last); the pose's
        k of n among the hyperframes after the arming starts it."""
        armed = self.armed[c]
        if armed is not None and frame <= self.until[c]:
            self.hits[c, self.count[c] % self.n] = pose >= self.thr[c]
            self.count[c] += 1
            if int(np.count_nonzero(self.hits[c])) >= self.k:
                self.armed[c] = None
                return armed
        elif armed is not None:  # lapsed: nothing followed it
            self.armed[c] = armed = None
        if hit is not None:
            if armed is None:
                self.hits[c] = False
                self.count[c] = 0
                self.armed[c] = hit
            else:  # the first arming hit's frame, the highest peak
                self.armed[c] = (armed[0], max(armed[1], hit[1]), armed[2])
            self.until[c] = frame + self.span[c]
        return None
