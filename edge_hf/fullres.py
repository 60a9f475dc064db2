"""Full-resolution frames kept for snapshots (``--snapshots`` only; without it no ring exists).

An alert's snapshot is the centre frame (``HyperframeSpec.centre_lag``) of the first hyperframe
of the k-of-n run that started the event, at the camera's resolution. By the time the alert
logic decides, the capture thread has moved on, so each camera keeps a small ring of
full-resolution decode buffers, and the decoder reads the frames that will be the centre of a
hyperframe straight into the next one (``Source.retrieve(out)``): no per-frame copy, one lock
round trip per kept frame. The one copy is made when an event starts (``copy``).

What is kept: frame ``i`` is decoded into the ring when ``i + centre_lag`` is an anchor; other
frames the sampler needs are decoded into the source's own buffer as before. In two-stage mode
the lag is the confirming model's (its scores start events); its frames are on the shared ring.

How many slots (``slots_needed``), counted in hyperframes, since one centre frame is kept per
anchor whatever the hop: the first hyperframe of the run is at most ``n - 1`` before the one
that fired (k-of-n); when the inference thread decides on that one, capture is at most
``PIPELINE`` hyperframes further on (one waiting in the one-slot mailbox, the next being decoded:
exact for ``--fast`` files, whose capture waits for inference; a live camera stays within it
while the model takes less than a hop); and centre frames of anchors not yet reached are
decoded ``centre_lag`` frames early, ``centre_lag // every`` more.

A class that waits for a pose (``edge_hf.alerts``, ``Then``) starts its alert later than its k
of n: up to ``within`` seconds after the *last* hyperframe that re-armed it, and its hits re-arm
it for as long as they go on (the demo model's falls: 13 hyperframes, then the pose). No ring
size covers that, so the frame is not waited for in the ring: when its k of n arms the class,
which is when a class without a wait would start, the camera holds the frame's slot
(``hold``), and lets it go when the alert has started or the wait lapsed (``release``). A held
slot is pinned, so each class that may wait has one slot more (``held``).

A frame that is gone anyway (a stalled inference loop, hyperframes skipped as still in
between) is too late: the newest kept frame is used instead, counted in ``late`` and logged
once; the event is never held up.

Ownership: ``index[s]`` is the source frame index slot ``s`` holds, -1 while it is written;
``_pins[s]`` counts readers copying it. Both change only under ``_lock``, which is held for a
few assignments, never for a decode or a copy. The capture thread (the only writer) claims the
next slot that no reader has pinned (marking it -1), decodes into it without the lock, then
publishes its index. A reader (the inference thread at an event's start, the HTTP thread for
the status page) pins the slot holding its frame under the lock, copies it without the lock,
and unpins it; the inference thread also pins the frame of an armed wait until it is over
(``hold``, ``release``): a pinned slot is never written, and a slot being written is never found, so
neither side waits for the other's decode or copy. If every slot is pinned at once, the frame
is decoded into the source's own buffer and simply not kept.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from edge_hf.sources.base import Source

log = logging.getLogger("edge_hf.snapshots")
PIPELINE = 2  # hyperframes capture can be past the one being decided (see the docstring)


def slots_needed(n: int, centre_lag: int, every: int, held: int = 0) -> int:
    """Slots so that the centre frame of any of the last ``n`` hyperframes the alert logic saw
    is still kept when it decides, with ``held`` of them held for classes that wait for a pose
    (the module docstring derives it)."""
    return n + PIPELINE + centre_lag // every + held


class FullResRing:
    def __init__(self, camera: str, slots: int, centre_lag: int) -> None:
        self.camera, self.lag = camera, centre_lag
        # allocated on first use, at the source's size (known only once it delivers a frame)
        self.slots: list[np.ndarray | None] = [None] * slots
        self.index = [-1] * slots  # source frame index held; -1: none, or being written
        self._pins = [0] * slots
        self._lock = threading.Lock()
        self._next = 0  # the slot the writer tries next
        self.newest = -1  # the slot written last
        self.late = 0  # snapshots whose frame was gone: the newest kept frame was used

    def grow(self, slots: int) -> None:
        """At least ``slots`` slots (a new hop after a reopen may need more); capture thread,
        between reads."""
        with self._lock:
            more = slots - len(self.slots)
            if more > 0:
                self.slots += [None] * more
                self.index += [-1] * more
                self._pins += [0] * more

    def decode(self, source: Source, index: int) -> np.ndarray | None:
        """Decode the grabbed frame, source frame ``index``, into the next free slot; the
        frame (None: undecodable). Capture thread only."""
        with self._lock:
            s = self._claim()
            if s >= 0:
                self.index[s] = -1
        if s < 0:  # every slot is being copied: this frame is not kept
            return source.retrieve()
        slot = self.slots[s]
        frame = source.retrieve() if slot is None else source.retrieve(slot)
        if frame is None:
            return None
        if frame is not slot:  # first use, a new frame size, or a source that ignores `out`
            if slot is None or slot.shape != frame.shape:
                self.slots[s] = slot = np.empty_like(frame)
            np.copyto(slot, frame)
        with self._lock:
            self.index[s] = index
            self.newest = s
        return slot

    def _claim(self) -> int:
        """The next slot no reader holds, or -1; caller holds the lock."""
        k = len(self.slots)
        for j in range(k):
            s = (self._next + j) % k
            if not self._pins[s]:
                self._next = (s + 1) % k
                return s
        return -1

    def hold(self, index: int) -> bool:
        """Keep source frame ``index`` until ``release(index)``; False if it is gone already
        (``copy`` then falls back as for any frame that is gone). Inference thread."""
        with self._lock:
            found = next((j for j, i in enumerate(self.index) if i == index), -1)
            if found >= 0:
                self._pins[found] += 1
            return found >= 0

    def release(self, index: int) -> None:
        """Let go of a frame ``hold(index)`` kept."""
        with self._lock:
            found = next((j for j, i in enumerate(self.index) if i == index and self._pins[j]), -1)
            if found >= 0:
                self._pins[found] -= 1

    def copy(self, index: int | None = None) -> np.ndarray | None:
        """A copy of source frame ``index`` (None: the newest kept frame, as is a frame that is
        gone, counted in ``late``); None before the first frame. Any thread."""
        with self._lock:
            s = self.newest
            if index is not None:
                found = next((j for j, i in enumerate(self.index) if i == index), -1)
                if found < 0 and s >= 0:
                    self.late += 1
                    if self.late == 1:
                        log.warning(
                            "camera %s: snapshot frame %d was no longer kept (the alert was "
                            "decided late); the newest kept frame %d is used instead (said "
                            "once; the run's summary counts them)",
                            self.camera,
                            index,
                            self.index[s],
                        )
                s = found if found >= 0 else s
            if s < 0 or self.index[s] < 0:
                return None
            self._pins[s] += 1
        try:
            return self.slots[s].copy()
        finally:
            with self._lock:
                self._pins[s] -= 1
