"""Frame cache: each video decoded once, resized with the runtime's own ``resize_into``, kept as
a uint8 ``[F, H, W, 3]`` BGR memmap keyed by the file's content and the target size.

Entries are raw frames (the realistic data's 700 clips and 24 stories at 160 px: 7.2 GB), so
the cache keeps to a size limit: before a new entry is written, the least recently used entries
that this run has not used are deleted until it fits (a run that alone needs more than the limit
is told so once, and nothing it uses is deleted). A full disk is an error that names the folder
and the fix."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path

import cv2
import numpy as np

from edge_hf.sampler import resize_into
from models.errors import BadData

DEFAULT_LIMIT_GB = 20.0
log = logging.getLogger(__name__)


class FrameCache:
    def __init__(
        self,
        root: Path,
        size: tuple[int, int],
        interpolation: str = "linear",
        limit_gb: float = DEFAULT_LIMIT_GB,
    ) -> None:
        self.root, self.size, self.interpolation = Path(root), size, interpolation
        self.root.mkdir(parents=True, exist_ok=True)
        self.limit = int(limit_gb * 1e9) if limit_gb > 0 else 0  # bytes; 0: no limit
        self.decoded = 0  # videos decoded by this instance (0 on a warm cache)
        self.evicted = 0  # entries this instance deleted to stay under the limit
        # looks at the whole folder: one per ~5 % of the limit written, not one per entry
        self.scans = 0
        self._used: set[Path] = set()  # entries this run has returned: never evicted by it
        self._warned = False
        self._total = 0  # bytes in the folder at the last scan, plus what this run wrote since
        self._scan_at = -1  # the next write that takes _total past this looks at the folder again

    def key(self, video: Path) -> str:
        h = hashlib.sha1()
        with open(video, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return f"{h.hexdigest()[:20]}-{self.size[0]}x{self.size[1]}-{self.interpolation}"

    def frames(self, video: Path) -> np.ndarray | None:
        """All frames of ``video`` at the cache size (read-only memmap), or None if unreadable."""
        path = self.root / f"{self.key(video)}.npy"
        if path.exists():
            with contextlib.suppress(OSError):  # a read-only cache still serves its entries
                os.utime(path)  # recently used: the last to be evicted
        else:
            frames = self._decode(video)
            if frames is None:
                return None
            self._make_room(frames.nbytes)
            self._write(path, frames)
        self._used.add(path)
        return np.load(path, mmap_mode="r")

    def _write(self, path: Path, frames: np.ndarray) -> None:
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        try:
            np.save(tmp, frames)
            tmp.replace(path)  # atomic: a crashed run never leaves a half-written entry
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise BadData(
                f"frame cache {self.root}: cannot write a {frames.nbytes / 1e6:.0f} MB entry "
                f"({e.strerror or e}); free space there, or pass --cache FOLDER on another disk "
                "or a lower --cache-limit-gb"
            ) from None

    def _make_room(self, need: int) -> None:
        """Delete the least recently used entries this run has not used until ``need`` bytes
        more fit under the limit, with 5 % to spare so that the folder (tens of thousands of
        entries) is looked at once per 5 % of the limit written, not once per entry. Other runs
        sharing the folder keep what they mapped (a deleted file lives on while it is mapped);
        what they write meanwhile is seen at the next look."""
        if not self.limit:
            return
        if self._total + need <= self._scan_at:
            self._total += need
            return
        entries, total = self._entries()
        goal = self.limit - self.limit // 20
        for _, size, p in entries:
            if total + need <= goal:
                break
            if p not in self._used:
                p.unlink(missing_ok=True)
                total, self.evicted = total - size, self.evicted + 1
        self._total = total + need
        self._scan_at = self.limit if self._total <= self.limit else self._total + self.limit // 20
        if self._total > self.limit and not self._warned:
            self._warned = True
            log.warning(
                "frame cache %s: this run's videos alone need more than its %.1f GB limit; "
                "they are all kept (raise --cache-limit-gb to keep other runs' entries too)",
                self.root,
                self.limit / 1e9,
            )

    def _entries(self) -> tuple[list[tuple[float, int, Path]], int]:
        """The folder's entries, least recently used first, and their total size."""
        self.scans += 1
        entries = []
        for p in self.root.glob("*.npy"):
            if ".tmp" in p.suffixes:
                continue
            try:
                st = p.stat()
            except FileNotFoundError:  # evicted by another run meanwhile
                continue
            entries.append((st.st_mtime, st.st_size, p))
        return sorted(entries), sum(size for _, size, _ in entries)

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
