"""One camera of a run: its source, capture thread, mailbox, motion gate and alert logic, and
what it says about itself (``counters()``), so the runtime never reads capture internals."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from edge_hf.alerts import AlertLogic, AlertPolicy
from edge_hf.capture import Capture, CapturePolicy, Mailbox
from edge_hf.fullres import FullResRing, slots_needed
from edge_hf.health import CameraCounters, Heartbeat
from edge_hf.motion import MotionGate, MotionOptions
from edge_hf.sampler import StrideSampler, hop_from_hz
from edge_hf.sources import Source
from edge_hf.spec import HyperframeSpec

CONNECTED_WITHIN = 5.0  # seconds: a camera whose last frame is older is not "connected"
# a camera whose frame rate is off the model's by more than this factor is told about, once
RATE_OFF = 1.25
log = logging.getLogger("edge_hf")


@dataclass(frozen=True)
class CameraSettings:
    """What one camera may set for itself in the config file (None or empty: the run's)."""

    every: int | None = None
    hz: float | None = None
    thresholds: tuple[tuple[str, float], ...] = ()  # refine the run's thresholds
    down_for: float | None = None  # seconds down before the down level (0: none)
    realarm: float | None = None  # seconds between its re-alarms (0: none)
    motion: tuple[tuple[str, Any], ...] = ()  # MotionOptions fields that differ from the run's


@dataclass(frozen=True)
class CameraPlan:
    """Everything a camera is built from, resolved (the run's settings with the camera's own)."""

    every: int
    hz: float | None
    policy: AlertPolicy
    motion: MotionOptions
    capture: CapturePolicy
    block: bool  # --fast files: wait for inference rather than drop a hyperframe
    snapshots: bool = False  # keep full-resolution centre frames (edge_hf.fullres)


class Camera:
    def __init__(
        self,
        source: Source,
        spec: HyperframeSpec,
        plan: CameraPlan,
        cond: threading.Condition,
        stop: threading.Event,
        heartbeat: Heartbeat,
        opened: bool = False,
        confirm: HyperframeSpec | None = None,
    ) -> None:
        """``confirm``: the confirming model's spec (two-stage mode): one ring for both."""
        self.source, self.name, self.hz = source, source.name, plan.hz
        self._trained_fps, self._rate_said = spec.fps, False
        every = hop_from_hz(plan.hz, source.fps) if plan.hz else plan.every
        self.sampler = StrideSampler(spec, every, confirm)
        self.mailbox = Mailbox(self.sampler, cond, block=plan.block, stop=stop)
        self.capture = Capture(source, self.mailbox, plan.capture, stop, opened, heartbeat)
        self.capture.on_open = self._retime
        if plan.motion.enabled:
            self.capture.gate = MotionGate(plan.motion, self.sampler)
        self.logic = AlertLogic(source.name, spec.classes, plan.policy, source.fps)
        self.labels = tuple(self.logic.labels)  # its alert classes
        self.keys = self.logic.keys  # and what the sinks name its alerts by (edge_hf.alerts)
        self._waiting = self.logic.waiting_classes if plan.snapshots else ()
        self._wanted = [-1] * len(self._waiting)  # the frame each one's start will show
        self._held = [False] * len(self._waiting)  # and whether the ring holds it
        if plan.snapshots:  # the model whose scores start events names the centre frame
            lag = (confirm or spec).centre_lag
            slots = slots_needed(plan.policy.n, lag, every, len(self._waiting))
            self.capture.keep = FullResRing(self.name, slots, lag)
        self.processed = 0  # hyperframes this camera put through the model (inference thread)

    @property
    def stats(self):
        return self.mailbox.stats

    def _retime(self, fps: float) -> None:
        """The source (re)opened at ``fps``: the hop (with --hz) and the cooldown follow it.
        Called by the capture thread between reads, when the ring starts afresh."""
        self._check_rate(fps)
        if self.hz:
            every = hop_from_hz(self.hz, fps)
            if every != self.sampler.every:
                self.sampler.set_every(every)
                if (keep := self.capture.keep) is not None:
                    n, held = self.logic.policy.n, len(self._waiting)
                    keep.grow(slots_needed(n, keep.lag, every, held))
        self.logic.fps = fps

    def _check_rate(self, fps: float) -> None:
        """Say once if the camera's frame rate is far from the model's: its stride counts
        frames, so at 10 fps a model trained at 25 sees every motion 2.5 times faster."""
        trained = self._trained_fps
        if self._rate_said or not trained or fps <= 0 or 1 / RATE_OFF <= fps / trained <= RATE_OFF:
            return
        self._rate_said = True
        log.warning(
            "camera %s: %g fps, but the model was trained on %g fps video: it sees every motion "
            "%.2g times %s than it learnt, and may miss falls or raise false alarms; set the "
            "camera (or its substream) to %g fps, or train on video at this rate "
            "(docs/runtime.md: frame rates)",
            self.name,
            fps,
            trained,
            max(fps, trained) / min(fps, trained),
            "faster" if fps < trained else "slower",
            trained,
        )

    def counters(self, now: float | None = None) -> CameraCounters:
        """A snapshot of this camera's counters, any thread (reads may be a frame stale)."""
        s = self.mailbox.stats
        now = time.monotonic() if now is None else now
        return CameraCounters(
            name=self.name,
            grabbed=s.grabbed,
            processed=self.processed,
            dropped=s.dropped,
            reconnects=s.reconnects,
            connected=s.connected and now - s.last_frame < CONNECTED_WITHIN,
            skipped=(("still", s.still), ("stale", s.stale), ("busy", s.dropped)),
            snapshots_late=keep.late if (keep := self.capture.keep) is not None else 0,
        )

    def summary(self) -> list[str]:
        """What this camera did, for the run's last log lines."""
        s, late = self.stats, self.counters().snapshots_late
        lines = [
            f"camera {self.name}: {s.grabbed} frames, {s.decoded} decoded, "
            f"{s.published + s.still} hyperframes, {self.processed} processed, skipped: "
            f"{s.still} still, {s.stale} stale, {s.dropped} busy; {s.reconnects} reconnects"
        ]
        if late:
            lines.append(
                f"camera {self.name}: {late} snapshot(s) of a newer frame (theirs was gone)"
            )
        return lines

    def latest_frame(self) -> np.ndarray | None:
        """A copy of the newest decoded frame at full resolution (None before the first); with
        --snapshots the newest kept one (a centre frame: at most a hop and the lag older)."""
        return self.capture.snapshot()

    def hold_armed(self) -> None:
        """Hold the snapshot frame of each class that is armed and waits for its pose, until
        its alert starts or the wait lapses (edge_hf.fullres says why). Inference thread, after
        each hyperframe's events have taken their snapshots."""
        keep = self.capture.keep
        for j, c in enumerate(self._waiting):
            first = self.logic.armed_first(c)
            want = first - keep.lag if first >= 0 else -1
            if want == self._wanted[j]:
                continue
            if self._held[j]:
                keep.release(self._wanted[j])
            self._wanted[j] = want
            self._held[j] = want >= 0 and keep.hold(want)  # False: gone already (late)

    def snapshot(self, anchor: int) -> np.ndarray | None:
        """A copy of the centre frame of the hyperframe whose newest frame is source frame
        ``anchor``, at full resolution (the newest kept frame if it is gone); --snapshots."""
        keep = self.capture.keep
        return None if keep is None else keep.copy(anchor - keep.lag)
