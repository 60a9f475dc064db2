"""Motion gating: skip the model on a still scene, from frames the ring already holds.

At each anchor the capture thread asks the gate whether the window is worth a model call. The
score is the share of a small grey picture (``SIZE``) that changed by more than ``pixel`` grey
levels between the window's oldest and newest frames (both already decoded and resized into the
ring: no extra decode, and every buffer is allocated once). A window whose score is below
``threshold`` is *still* and skipped, unless the scene moved less than ``hold`` seconds ago (so
the frames that follow a fall, and the alert logic's k-of-n, are still scored) or the model has
not run on this camera for ``max_skip`` seconds (so a slow change, or a model that alerts on a
still picture, is still seen now and then). Frigate gates its detector the same way, on a
low-resolution motion mask; here the "low resolution" is the model's own input size, already paid.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from edge_hf.errors import UsageError
from edge_hf.sampler import StrideSampler

SIZE = (40, 40)  # (W, H) of the grey picture the score is computed on


@dataclass(frozen=True)
class MotionOptions:
    enabled: bool = False
    threshold: float = 0.01  # share of the picture that must change to count as motion
    max_skip: float = 2.0  # seconds: on a still scene the model still runs this often
    pixel: int = 15  # grey levels (of 255) a pixel must change by to count as changed
    hold: float = 1.0  # seconds the model keeps running after the last motion

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= 1:
            raise UsageError(f"motion threshold must be 0 to 1, found {self.threshold}")
        if not 0 < self.max_skip <= 3600:
            raise UsageError(f"motion max_skip must be > 0 and <= 3600 s, found {self.max_skip}")


class MotionGate:
    """One camera's gate; called by its capture thread only. Allocates in ``__init__`` only."""

    def __init__(self, opts: MotionOptions, sampler: StrideSampler) -> None:
        self.opts, self.sampler = opts, sampler
        h, w = sampler.spec.size
        self._grey = np.zeros((h, w), np.uint8)
        self._new = np.zeros(SIZE[::-1], np.uint8)
        self._old = np.zeros_like(self._new)
        self._diff = np.zeros_like(self._new)
        self._lag = sampler.window - 1  # the window's oldest frame; 0: compare with last anchor
        self.score = 0.0  # of the last window, for tests and debugging
        self.reset()

    def reset(self) -> None:
        """Forget the past (a reopened source): the next window is always scored."""
        self._last_run = self._last_motion = float("-inf")
        self._have_old = False

    def admit(self, anchor: int, now: float) -> bool:
        """Should the hyperframe anchored at ring index ``anchor`` go to the model? ``now`` is
        video time in seconds (frames / fps). False means it is still and skipped."""
        self.score = self._score(anchor)
        o = self.opts
        if self.score >= o.threshold:
            self._last_motion = now
        if now - self._last_motion < o.hold or now - self._last_run >= o.max_skip:
            self._last_run = now
            return True
        return False

    def _score(self, anchor: int) -> float:
        self._small(self.sampler.slot(anchor), self._new)
        if self._lag:
            self._small(self.sampler.slot(anchor - self._lag), self._old)
        elif not self._have_old:  # a one-frame window: compare with the previous anchor's
            self._have_old = True
            self._new, self._old = self._old, self._new
            return 1.0
        cv2.absdiff(self._new, self._old, dst=self._diff)
        cv2.threshold(self._diff, self.opts.pixel, 255, cv2.THRESH_BINARY, dst=self._diff)
        changed = cv2.countNonZero(self._diff) / self._diff.size
        if not self._lag:
            self._new, self._old = self._old, self._new
        return changed

    def _small(self, frame: np.ndarray, dst: np.ndarray) -> None:
        cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY, dst=self._grey)
        cv2.resize(self._grey, SIZE, dst=dst, interpolation=cv2.INTER_AREA)
