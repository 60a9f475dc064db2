"""Stands in for models.dataset.Windows where only its indexing matters (balanced choices)."""

from __future__ import annotations

import numpy as np


class FakeWindows:
    """Clips of one class, 3-frame windows at every start."""

    def __init__(self, clips: list[np.ndarray]) -> None:
        self.clips = clips
        self.offsets = np.arange(3)
        self.starts = [np.arange(len(c) - 2) for c in clips]
        self.labels = [np.zeros(len(c) - 2, int) for c in clips]

    def clip(self, c: int) -> np.ndarray:
        return self.clips[c]

    def window(self, c: int, s: int) -> np.ndarray:
        return self.clips[c][s + self.offsets]
