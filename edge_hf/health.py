"""Signs of life and counters, read by the watchdog (sd_notify) and the MQTT stats topic.

Each long-running loop (a camera's capture thread, the inference loop, a sink's worker) owns a
``Heartbeat`` and stamps it whenever it goes round, including while it waits on purpose (a
backoff, an idle source). A loop whose stamp is old is stuck. The cameras' capture loops are one
group: the process is alive while any of them goes round (``Health.stuck``), because a camera
that hangs is the camera's fault, and restarting the service would only stop the others.
Counters are plain numbers written by one thread and read by others: a slightly stale read is
fine for a rate.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


class Heartbeat:
    __slots__ = ("name", "group", "last", "retired")

    def __init__(self, name: str, group: str | None = None) -> None:
        self.name, self.group = name, group
        self.last = time.monotonic()
        self.retired = False  # the loop ended on purpose (a file that finished)

    def beat(self) -> None:
        self.last = time.monotonic()

    def retire(self) -> None:
        self.retired = True


class Health:
    """The loops that must keep going for the process to count as healthy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._beats: list[Heartbeat] = []

    def loop(self, name: str, group: str | None = None) -> Heartbeat:
        """A new loop to watch; ``group``: one of several alike (the cameras' captures), of
        which any one going round is enough for ``stuck``."""
        hb = Heartbeat(name, group)
        with self._lock:
            self._beats.append(hb)
        return hb

    def stale(self, limit: float) -> list[str]:
        """Names of the loops that have not gone round for more than ``limit`` seconds."""
        now = time.monotonic()
        with self._lock:
            return [b.name for b in self._beats if not b.retired and now - b.last > limit]

    def stuck(self, limit: float) -> list[str]:
        """The stale loops that make the process useless: each stale loop of no group, and
        every loop of a group none of whose loops has gone round within ``limit`` seconds."""
        now = time.monotonic()
        with self._lock:
            live = [b for b in self._beats if not b.retired]
        stale = [b for b in live if now - b.last > limit]
        going = {b.group for b in live if now - b.last <= limit and b.group is not None}
        return [b.name for b in stale if b.group is None or b.group not in going]


@dataclass(frozen=True)
class CameraCounters:
    name: str
    grabbed: int  # frames read from the source
    processed: int  # hyperframes that went through the model
    dropped: int  # hyperframes replaced before the model took them (it fell behind)
    reconnects: int
    connected: bool  # a frame arrived recently
    # hyperframes not put through the model, by reason (e.g. "still", "stale", "busy"): for a
    # runtime that skips some; readers export whatever reasons appear
    skipped: tuple[tuple[str, int], ...] = ()
    # --snapshots: event snapshots whose own frame was gone (the newest kept frame was used)
    snapshots_late: int = 0


# upper bounds (seconds) of the inference latency histogram; one more bucket for the rest
LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


@dataclass(frozen=True)
class Counters:
    """A snapshot of the runtime's counters; ``RateMeter`` turns two of them into rates.
    New fields get defaults, so that readers which do not know them keep working."""

    time: float  # time.monotonic()
    cameras: tuple[CameraCounters, ...]
    inferences: int
    p50_ms: float
    p95_ms: float
    latency_buckets: tuple[int, ...] = ()  # inferences per LATENCY_BUCKETS bucket (+ over)
    latency_sum: float = 0.0  # seconds, over all inferences
    stages: tuple[tuple[str, int], ...] = ()  # two-stage mode: screened, confirmed, rejected


class RateMeter:
    """Per-consumer rates: each consumer (stats topic, STATUS= line) keeps its own meter."""

    def __init__(self) -> None:
        self._last: Counters | None = None

    def report(self, c: Counters) -> dict:
        """JSON-ready summary; fps are averages since this meter's previous report."""
        prev, self._last = self._last, c
        dt = c.time - prev.time if prev else 0.0
        before = {p.name: p for p in prev.cameras} if prev else {}
        cameras = {}
        for cam in c.cameras:
            p = before.get(cam.name)
            cameras[cam.name] = {
                "fps": _rate(cam.grabbed, p.grabbed if p else None, dt),
                "processed_fps": _rate(cam.processed, p.processed if p else None, dt),
                "frames": cam.grabbed,
                "processed": cam.processed,
                "dropped": cam.dropped,
                "reconnects": cam.reconnects,
                "connected": cam.connected,
            }
        out = {
            "cameras": cameras,
            "inference": {
                "runs": c.inferences,
                "p50_ms": round(c.p50_ms, 3),
                "p95_ms": round(c.p95_ms, 3),
            },
        }
        if c.stages:
            out["two_stage"] = dict(c.stages)
        return out


def _rate(now: int, before: int | None, dt: float) -> float:
    return round((now - before) / dt, 2) if before is not None and dt > 0 else 0.0
