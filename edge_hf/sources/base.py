"""The source seam: a camera, stream, file or synthetic scene that yields BGR frames.

The capture thread calls ``grab()`` for every frame and ``retrieve()`` only for frames the sampler
needs, so a source must make ``grab()`` cheap (no decode into a user buffer) where it can.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class SourceOptions:
    """How to open a source; validated by the CLI, passed inward unchanged."""

    fast: bool = False  # files and synth: as fast as possible instead of at their own fps
    loop: bool = False  # files: start again at the end
    open_timeout: float = 10.0  # seconds, network streams
    read_timeout: float = 10.0  # seconds, network streams (also bounds a stall)
    # FFmpeg decoder threads per camera (files and streams); 0: FFmpeg's own choice (about one
    # per core, per camera: 32 cameras on 2 cores would be 96 threads fighting for them)
    decoder_threads: int = 1


class Source(Protocol):
    name: str  # camera name used in events
    display: str  # printable description, credentials masked
    live: bool  # reopen forever after a failure; a non-live source that ends ends the run
    fps: float  # frames per second once open (nominal if the source does not say)

    def open(self) -> None:
        """Open or reopen; raise SourceError with a fix when it cannot."""

    def grab(self) -> bool:
        """Advance one frame; False when the source ended or was lost."""

    def retrieve(self, out: np.ndarray | None = None) -> np.ndarray:
        """The grabbed frame, decoded into a buffer the source reuses, or into ``out`` (a frame
        of the source's size and type: --snapshots' full-resolution ring, edge_hf.fullres); a
        source that cannot decode into ``out`` returns its own buffer, which the caller copies."""

    def release(self) -> None:
        """Free the device or connection; safe to call twice."""


class Pacer:
    """Sleeps so that frame ``n`` is delivered no earlier than ``n / fps`` after frame 0.

    The clock starts at the first frame after ``reset()``, not at the reset: a source opened
    some time before it is read (a file, opened at start-up to check it) would otherwise
    deliver that time's frames in one burst, as no camera does."""

    def __init__(self, fps: float, enabled: bool) -> None:
        self.period = 1.0 / fps if enabled and fps > 0 else 0.0
        self._start = 0.0
        self._n = 0

    def reset(self) -> None:
        self._n = 0

    def wait(self) -> None:
        if self.period:
            if self._n == 0:
                self._start = time.monotonic()
            delay = self._start + self._n * self.period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        self._n += 1
