"""Snapshots: a JPEG of the frame that mattered when an alert starts, kept in a bounded directory.

``--snapshots`` (``[snapshots] enabled = true``). The frame is the centre frame
(``HyperframeSpec.centre_lag``; the confirming model's in two-stage mode) of the event's *first*
hyperframe, the oldest hit of the k-of-n run that started it, at the camera's full resolution:
for a fall, the figure on its way down rather than already on the floor. The capture thread
decodes every hyperframe's centre frame straight into a small per-camera ring of
full-resolution buffers (``edge_hf.fullres``, which says how many and who may touch which), so
frames where no event starts cost no copy; at the start the frame loop copies the one frame out
(``Camera.snapshot``). Should it be gone already (the loop was stalled), the newest kept frame
is used, counted and logged once. Without ``--snapshots`` there is no ring.

The frame is written as ``<camera>-<label>-<UTC time>-<id>.jpg`` under ``--snapshot-dir``
(default ``<state dir>/snapshots``), and a small JPEG (height at most ``SMALL_HEIGHT``) goes to
the sinks with the event: MQTT publishes it retained on ``<prefix>/<camera>/<label>/snapshot``
before the event, HTTP serves the file at ``/snapshots/<file>``. The directory is bounded by
count and bytes; the oldest files go first. Only files named as the store names them (``OWN``)
are counted, served or deleted: the directory may be one a person also keeps photos in.
"""

from __future__ import annotations

import logging
import os
import re
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import cv2
import numpy as np

from edge_hf.errors import SinkError

log = logging.getLogger("edge_hf.snapshots")
SMALL_HEIGHT = 270
QUALITY = 90
# the names save() writes, <camera>-<label>-<UTC time>-<id>.jpg: the only files the store
# counts, serves (/snapshots/<file>) or deletes (fullmatch)
OWN = re.compile(r"[A-Za-z0-9_-]+-[0-9]{8}T[0-9]{6}-[A-Za-z0-9_-]{1,8}\.jpg")
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class SnapshotOptions:
    directory: Path
    max_count: int = 200
    max_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class Snapshot:
    file: str  # the name in the directory
    small: bytes  # JPEG, height <= SMALL_HEIGHT


class SnapshotStore:
    def __init__(self, opts: SnapshotOptions) -> None:
        self.opts = opts
        self.dir = Path(opts.directory)
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            files, foreign = self._scan()
        except OSError as e:
            raise SinkError(
                f"--snapshot-dir {self.dir}: cannot use it ({e.strerror}); make it writable "
                f"by this user or choose another"
            ) from None
        self._files: deque[tuple[str, int]] = deque((name, size) for _, name, size in files)
        self.bytes = sum(size for _, size in self._files)
        self.failures = 0
        if foreign:
            log.info(
                "snapshots: %d file(s) in %s that edge-hf did not write (e.g. %s) are left alone",
                len(foreign),
                self.dir,
                min(foreign),
            )
        self._trim()

    def _scan(self) -> tuple[list[tuple[float, str, int]], list[str]]:
        """Our snapshots, oldest first, as (mtime, name, size); the names of everything else."""
        ours, foreign = [], []
        for p in self.dir.iterdir():
            if OWN.fullmatch(p.name) and p.is_file():
                st = p.stat()
                ours.append((st.st_mtime, p.name, st.st_size))
            else:
                foreign.append(p.name)
        return sorted(ours), foreign

    def save(self, camera: str, label: str, event_id: str, t: float, image: np.ndarray) -> Snapshot:
        """Write one snapshot; raises OSError when the disk refuses it."""
        stamp = datetime.fromtimestamp(t, timezone.utc).strftime("%Y%m%dT%H%M%S")
        name = f"{_slug(camera)}-{_slug(label)}-{stamp}-{_slug(event_id[:8])}.jpg"
        full = _jpeg(image)
        tmp = self.dir / f".{name}.tmp"
        tmp.write_bytes(full)
        os.replace(tmp, self.dir / name)
        self._files.append((name, len(full)))
        self.bytes += len(full)
        self._trim()
        return Snapshot(name, _jpeg(_small(image)))

    def path(self, name: str) -> Path | None:
        """The file behind ``/snapshots/<name>``, or None (a name that is not one of ours)."""
        if not OWN.fullmatch(name):
            return None
        p = self.dir / name
        return p if p.is_file() else None

    def _trim(self) -> None:
        o = self.opts
        # the newest stays even if it alone is over max_bytes: its event names it
        while len(self._files) > 1 and (len(self._files) > o.max_count or self.bytes > o.max_bytes):
            name, size = self._files.popleft()
            self.bytes -= size
            try:
                (self.dir / name).unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                log.warning("snapshots: cannot remove %s (%s)", name, e.strerror)


def _slug(text: str) -> str:
    return _SLUG.sub("_", text).strip("_") or "x"


def _jpeg(image: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, QUALITY])
    if not ok:
        raise OSError(f"cannot encode a {image.shape} frame as JPEG")
    return buf.tobytes()


def _small(image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    if h <= SMALL_HEIGHT:
        return image
    width = max(1, round(w * SMALL_HEIGHT / h))
    return cv2.resize(image, (width, SMALL_HEIGHT), interpolation=cv2.INTER_AREA)
