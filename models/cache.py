"""Frame cache: each video decoded once, resized with the runtime's own ``resize_into``, kept as
a uint8 ``[F, H, W, 3]`` BGR memmap keyed by the file's content and the target size."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import cv2
import numpy as np

from edge_hf.sampler import resize_into


class FrameCache:
    def __init__(self, root: Path, size: tuple[int, int], interpolation: str = "linear") -> None:
        self.root, self.size, self.interpolation = Path(root), size, interpolation
        self.root.mkdir(parents=True, exist_ok=True)
        self.decoded = 0  # videos decoded by this instance (0 on a warm cache)

    def key(self, video: Path) -> str:
        h = hashlib.sha1()
        with open(video, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return f"{h.hexdigest()[:20]}-{self.size[0]}x{self.size[1]}-{self.interpolation}"

    def frames(self, video: Path) -> np.ndarray | None:
        """All frames of ``video`` at the cache size (read-only memmap), or None if unreadable."""
        path = self.root / f"{self.key(video)}.npy"
        if not path.exists():
            frames = self._decode(video)
            if frames is None:
                return None
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
            np.save(tmp, frames)
            tmp.replace(path)  # atomic: a crashed run never leaves a half-written entry
        return np.load(path, mmap_mode="r")

    def _decode(self, video: Path) -> np.ndarray | None:
        cap = cv2.VideoCapture(str(video))
        if not cap.isOpened():
            return None
        h, w = self.size
        out, buf = [], None
        while True:
            ok, buf = cap.read(buf)
            if not ok:
                break
            small = np.empty((h, w, 3), np.uint8)
            resize_into(buf, small, self.interpolation)
            out.append(small)
        cap.release()
        self.decoded += 1
        return np.stack(out) if out else None
