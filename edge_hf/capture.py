"""One capture thread per source: grab every frame, decode and resize only the frames the sampler
needs, hand finished hyperframes to inference through a one-slot mailbox, and survive a source
that fails (release, back off, reopen).

Reconnecting: the backoff doubles from ``backoff_min`` to ``backoff_max``, but while an outage is
young (``young`` seconds) no wait is longer than ``young_backoff_max`` (and the doubling resumes
from there after), so a camera that comes back after a reboot or a short network cut is read
again within seconds. After ``healthy``
seconds of frames the backoff starts afresh, whatever ends that stretch (a drop or a stall).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edge_hf.errors import SourceError
from edge_hf.fullres import FullResRing
from edge_hf.health import Heartbeat
from edge_hf.motion import MotionGate
from edge_hf.sampler import StrideSampler, resize_into
from edge_hf.sources.base import Source

log = logging.getLogger("edge_hf.capture")


@dataclass(frozen=True)
class CapturePolicy:
    stall_timeout: float = 10.0  # seconds without a frame before the source is reopened
    backoff_min: float = 1.0
    backoff_max: float = 30.0
    young: float = 90.0  # seconds: an outage this young is retried at least every ...
    young_backoff_max: float = 2.0  # ... this many seconds
    healthy: float = 10.0  # seconds of frames after which the backoff starts afresh


@dataclass
class CaptureStats:
    """Counters written by the capture thread, read (racily, which is fine) by others."""

    grabbed: int = 0
    decoded: int = 0
    published: int = 0
    dropped: int = 0  # hyperframes replaced before inference took them (it was busy)
    still: int = 0  # hyperframes the motion gate kept from the model (nothing moved)
    stale: int = 0  # hyperframes too old when inference got to them, discarded
    failures: int = 0  # open failures, losses and stalls
    reconnects: int = 0
    last_frame: float = 0.0  # time.monotonic() of the last grabbed frame
    connected: bool = False  # frames are flowing: a frame arrived since the last (re)open


def confirm_buffers(sampler: StrideSampler) -> list[np.ndarray | None]:
    """One hyperframe of the confirming model's inputs, None where the screen's has the frames."""
    return [
        None if j is not None else b
        for j, b in zip(sampler.shared, sampler.input_buffers(model=1), strict=True)
    ]


class Mailbox:
    """Latest-only handoff of one camera's hyperframe: a newer one replaces an unread one
    (counted as dropped: inference was busy), so a slow model never builds a queue. It owns the
    camera's sampler (whose ring it gathers from) and its stats; buffers are allocated once.
    ``block`` (files with --fast): wait for inference to take the last one instead."""

    def __init__(
        self,
        sampler: StrideSampler,
        cond: threading.Condition,
        stats: CaptureStats | None = None,
        block: bool = False,
        stop: threading.Event | None = None,
    ) -> None:
        self.sampler = sampler
        self.cond = cond  # shared by all cameras so inference can wait on any of them
        self.stats = stats if stats is not None else CaptureStats()
        self.block, self.stop = block, stop if stop is not None else threading.Event()
        self.buffers = sampler.input_buffers()
        # two-stage mode: the confirming model's inputs at the same anchor, from the same ring;
        # None for an input that is one of the screen's (its frames are in self.buffers)
        self.confirm = confirm_buffers(sampler) if sampler.confirm is not None else None
        self.fresh = False
        self.frame = -1  # source frame index of the newest frame in the hyperframe
        self.time = 0.0  # wall-clock time that frame was grabbed
        # time.monotonic() this camera began waiting: its first put since the last take (a
        # replacement keeps it), so "waiting longest" is the camera served longest ago
        self.since = 0.0

    def put(self, anchor: int, frame: int) -> None:
        """Gather the hyperframe anchored at ring index ``anchor`` (source frame ``frame``)."""
        with self.cond:
            while self.block and self.fresh and not self.stop.is_set():
                self.cond.wait(0.1)
            if self.fresh:
                self.stats.dropped += 1
            else:
                self.since = time.monotonic()
            self.sampler.gather(anchor, self.buffers)
            if self.confirm is not None:
                self.sampler.gather(anchor, self.confirm, model=1)
            self.frame, self.time, self.fresh = frame, time.time(), True
            self.stats.published += 1
            self.cond.notify_all()

    def take(self, inputs: list[np.ndarray], row: int = 0) -> None:
        """Copy the hyperframe into row ``row`` of the backend's bound inputs; caller holds
        ``cond``."""
        for src, dst in zip(self.buffers, inputs, strict=True):
            np.copyto(dst[row], src[0])
        self.fresh = False
        self.cond.notify_all()

    def swap_confirm(self, spare: list[np.ndarray | None]) -> list[np.ndarray | None]:
        """Two-stage mode, with ``take``: hand over the confirming model's gathered inputs and
        gather the next ones into ``spare`` (same shapes): no copy, whether or not the screen
        will want them confirmed; caller holds ``cond``."""
        full, self.confirm = self.confirm, spare
        return full

    def discard(self) -> None:
        """Drop the waiting hyperframe unread (too old to be worth a model call); caller holds
        ``cond``."""
        self.fresh = False
        self.stats.stale += 1
        self.cond.notify_all()


class Capture(threading.Thread):
    def __init__(
        self,
        source: Source,
        mailbox: Mailbox,
        policy: CapturePolicy,
        stop: threading.Event,
        opened: bool = False,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        super().__init__(name=f"capture-{source.name}", daemon=True)
        self.source, self.mailbox, self.sampler = source, mailbox, mailbox.sampler
        self.policy, self.stop = policy, stop
        self.stats = mailbox.stats
        self.heartbeat = heartbeat or Heartbeat(f"capture {source.name}")
        self.error: SourceError | None = None  # why a non-live source gave up
        self.gate: MotionGate | None = None  # skips still windows (--motion)
        # --snapshots: full-resolution centre frames, decoded into it (edge_hf.fullres)
        self.keep: FullResRing | None = None
        # called with the source's fps after every successful (re)open: a camera that failed
        # its first open, or came back with another frame rate, is re-timed (--hz, cooldown)
        self.on_open: Callable[[float], None] | None = None
        self.done = threading.Event()
        # the first open has ended, opened or failed (READY waits for this or a first frame)
        self.tried = threading.Event()
        if opened:
            self.tried.set()
        self._opened = opened  # the source was opened by the caller already
        self._last: np.ndarray | None = None  # the newest decoded frame (the source's buffer)
        self._decoding = threading.Lock()  # held while the source decodes into that buffer
        self._down_since: float | None = None  # time.monotonic() the current outage began
        self._attempts = 0  # failed opens and reads in the current outage
        self._flowing_since = 0.0  # time.monotonic() of the first frame since the last open
        self._backoff = policy.backoff_min  # the wait after the next failure (before caps)

    def run(self) -> None:
        try:
            self._supervise()
        finally:
            self.source.release()
            self.heartbeat.retire()
            self.tried.set()
            self.done.set()
            with self.mailbox.cond:
                self.mailbox.cond.notify_all()

    def _supervise(self) -> None:
        src = self.source
        self._backoff = self.policy.backoff_min
        while not self.stop.is_set():
            self.heartbeat.beat()
            try:
                if not self._opened:
                    src.open()  # blocks up to --open-timeout; opens run side by side
                self._opened = False
            except SourceError as e:
                self.tried.set()
                if not src.live:
                    self.error = e
                    return
                delay = self._failed(time.monotonic())
                log.warning("%s; retrying in %.3g s", e, delay)
                self._wait(delay)
                continue
            self.tried.set()
            self._flowing_since = 0.0
            if self.on_open is not None:
                self.on_open(src.fps)
            if self.gate is not None:
                self.gate.reset()
            outcome = self._read()
            src.release()
            self.stats.connected = False
            if outcome == "ended" and not src.live and not self.stats.published:
                self.error = SourceError(
                    f"{src.display}: ended after {self.stats.grabbed} frame(s), too few for one "
                    f"hyperframe ({self.sampler.window} frames); is it a video?"
                )
                return
            if outcome == "stopped" or (outcome == "ended" and not src.live):
                return
            if not src.live:
                self.error = SourceError(
                    f"{src.display}: {_OUTCOMES[outcome]}".format(t=self.policy.stall_timeout)
                )
                return
            self.stats.reconnects += 1
            flowed = self._flowing_since > 0  # the outage began with the last frame
            if flowed and self.stats.last_frame - self._flowing_since >= self.policy.healthy:
                self._backoff = self.policy.backoff_min  # it worked for a while: start afresh
            delay = self._failed(self.stats.last_frame if flowed else 0.0)
            log.warning(
                "camera %s: %s; reconnecting in %.3g s",
                src.name,
                _OUTCOMES[outcome].format(t=self.policy.stall_timeout),
                delay,
            )
            self._wait(delay)

    def _failed(self, since: float) -> float:
        """Count a failure of the source, which has been down since ``since`` (or earlier);
        return how long to wait before the next attempt. While the outage is young the backoff
        stops growing at ``young_backoff_max``, and grows from there once it is not."""
        p = self.policy
        self.stats.failures += 1
        self._attempts += 1
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = since or now
        young = now - self._down_since < p.young
        delay = min(self._backoff, p.young_backoff_max) if young else self._backoff
        self._backoff = min(delay * 2, p.backoff_max)
        return delay

    def _came_back(self, now: float) -> None:
        """The first frame since a (re)open: frames flow again."""
        self.stats.connected = True
        self._flowing_since = now
        if self._down_since is not None:
            log.info(
                "camera %s: frames again after %.1f s without (%d failed attempt(s))",
                self.source.name,
                now - self._down_since,
                self._attempts,
            )
        self._down_since, self._attempts = None, 0

    def snapshot(self, frame: int | None = None) -> np.ndarray | None:
        """A copy of source frame ``frame`` at full resolution, made only when asked (at an
        alert's start, or for the status page). With --snapshots from the ring (``frame``, or
        the newest kept frame when it is gone or None); else the newest decoded frame. None
        before the first frame."""
        if self.keep is not None:
            return self.keep.copy(frame)
        with self._decoding:
            return None if self._last is None else self._last.copy()

    def _wait(self, seconds: float) -> None:
        """Back off, still beating: waiting on purpose is not being stuck."""
        deadline = time.monotonic() + seconds
        while not self.stop.is_set() and (left := deadline - time.monotonic()) > 0:
            self.heartbeat.beat()
            self.stop.wait(min(left, 1.0))

    def _read(self) -> str:
        """Read until the source ends, fails or stalls, or we are stopped. Allocation-free."""
        src, sm, st, box, hb = self.source, self.sampler, self.stats, self.mailbox, self.heartbeat
        gate, keep = self.gate, self.keep
        lag = keep.lag if keep is not None else 0
        interp, stall = sm.spec.interpolation, self.policy.stall_timeout
        i = 0  # index since (re)open: the ring starts empty after every reconnect
        last = time.monotonic()  # of the last frame, or of the open
        while not self.stop.is_set():
            ok = src.grab()
            now = time.monotonic()
            if not ok:
                return "ended" if i else "nothing"
            if now - last >= stall:
                return "stalled"
            last = st.last_frame = hb.last = now
            if i == 0:
                self._came_back(now)
            st.grabbed += 1
            if sm.is_needed(i):
                if keep is not None and sm.is_anchor(i + lag):  # a centre frame: keep it
                    frame = keep.decode(src, st.grabbed - 1)
                else:
                    with self._decoding:
                        frame = self._last = src.retrieve()
                if frame is None:
                    return "undecodable"
                resize_into(frame, sm.slot(i), interp)
                st.decoded += 1
                if sm.is_anchor(i):
                    # video time, as the cooldown's: a --fast file gates as it would live
                    if gate is None or gate.admit(i, st.grabbed / src.fps):
                        box.put(i, st.grabbed - 1)
                        if box.block:  # time spent waiting for inference is not the source's
                            last = time.monotonic()
                    else:
                        st.still += 1
            i += 1
        return "stopped"


_OUTCOMES = {
    "ended": "stream lost",
    "nothing": "opened but delivered no frame",
    "stalled": "no frame for more than {t:g} s (stall)",
    "undecodable": "a frame could not be decoded",
}
