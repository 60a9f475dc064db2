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

Each file is written to ``.<name>.tmp`` and renamed, so a reader never sees half a JPEG; a
temporary file is removed when its write fails, and those a killed process left are removed at
start. When the disk is full (ENOSPC, EDQUOT) the oldest of our snapshots are removed until the
new one fits, and the write is tried once more: the newest snapshot matters most. A snapshot
that still cannot be written raises OSError, and its alert goes out without it (the runtime).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
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
_TMP = re.compile(rf"\.{OWN.pattern}\.tmp")  # where save() writes first (fullmatch)
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")
_FULL = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class SnapshotOptions:
    directory: Path
    max_count: int = 200
    max_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class Snapshot:
    file: str  # the name in the directory
    small: bytes  # JPEG, height <= SMALL_HEIGHT


def check_directory(directory: Path) -> None:
    """Raise SinkError unless this user can create ``directory`` and write in it; changes
    nothing (``check-config``, and ``run`` before it opens a camera: not at the first alert)."""
    directory = Path(directory)
    p = directory
    try:
        while not os.path.lexists(p) and p.parent != p:  # the part that exists
            p = p.parent
        mode = os.stat(p).st_mode
    except OSError as e:  # a part is not a directory, or cannot be searched
        raise _unusable(directory, e.strerror) from None
    if not stat.S_ISDIR(mode):
        raise _unusable(directory, os.strerror(errno.ENOTDIR))
    need = os.W_OK | os.X_OK | (os.R_OK if p == directory else 0)
    if not os.access(p, need, effective_ids=os.access in os.supports_effective_ids):
        read_only = os.statvfs(p).f_flag & os.ST_RDONLY
        raise _unusable(directory, os.strerror(errno.EROFS if read_only else errno.EACCES))


def _unusable(directory: Path, reason: str | None) -> SinkError:
    return SinkError(
        f"--snapshot-dir {directory}: cannot use it ({reason}); make it writable by the user "
        f"edge-hf runs as, or choose another"
    )


class SnapshotStore:
    def __init__(self, opts: SnapshotOptions) -> None:
        self.opts = opts
        self.dir = Path(opts.directory)
        check_directory(self.dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            files, foreign, unfinished = self._scan()
            for name in unfinished:  # a process killed while writing one
                (self.dir / name).unlink()
        except OSError as e:
            raise _unusable(self.dir, e.strerror) from None
        self._files: deque[tuple[str, int]] = deque((name, size) for _, name, size in files)
        self.bytes = sum(size for _, size in self._files)
        self.failures = 0
        self.evicted = 0  # snapshots removed early to make room on a full disk
        if unfinished:
            log.info("snapshots: removed %d unfinished file(s) in %s", len(unfinished), self.dir)
        if foreign:
            log.info(
                "snapshots: %d file(s) in %s that edge-hf did not write (e.g. %s) are left alone",
                len(foreign),
                self.dir,
                min(foreign),
            )
        self._trim()

    def _scan(self) -> tuple[list[tuple[float, str, int]], list[str], list[str]]:
        """Our snapshots, oldest first, as (mtime, name, size); the names of everything else;
        our temporary files."""
        ours, foreign, unfinished = [], [], []
        for p in self.dir.iterdir():
            if OWN.fullmatch(p.name) and p.is_file():
                st = p.stat()
                ours.append((st.st_mtime, p.name, st.st_size))
            elif _TMP.fullmatch(p.name) and p.is_file():
                unfinished.append(p.name)
            else:
                foreign.append(p.name)
        return sorted(ours), foreign, unfinished

    def save(self, camera: str, label: str, event_id: str, t: float, image: np.ndarray) -> Snapshot:
        """Write one snapshot; raises OSError when the disk refuses it."""
        stamp = datetime.fromtimestamp(t, timezone.utc).strftime("%Y%m%dT%H%M%S")
        name = f"{_slug(camera)}-{_slug(label)}-{stamp}-{_slug(event_id[:8])}.jpg"
        full = _jpeg(image)
        try:
            self._write(name, full)
        except OSError as e:
            if e.errno not in _FULL or not self._make_room(len(full)):
                raise
            self._write(name, full)  # once more, in the room made
        self._files.append((name, len(full)))
        self.bytes += len(full)
        self._trim()
        return Snapshot(name, _jpeg(_small(image)))

    def _write(self, name: str, data: bytes) -> None:
        """``data`` as ``name``, whole or not at all: no temporary file is left behind."""
        tmp = self.dir / f".{name}.tmp"
        try:
            tmp.write_bytes(data)
            os.replace(tmp, self.dir / name)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def _make_room(self, size: int) -> bool:
        """The disk is full: remove our oldest snapshots until ``size`` bytes fit; whether any
        was removed (then the write is worth another try). None is removed when all of ours
        would not make room (the disk is full of someone else's data)."""
        block = _block(self.dir)
        need = _blocks(size, block) + block  # and one for the directory
        ours = sum(_blocks(n, block) for _, n in self._files)
        if _free(self.dir) + ours < need:
            return False
        removed = 0  # at least one: the disk said it is full, whatever statvfs says
        while self._files and (not removed or _free(self.dir) < need):
            self._remove_oldest()
            removed += 1
        if removed and not self.evicted:
            log.warning(
                "snapshots: the disk of %s is full; the oldest snapshots make room for new ones "
                "(said once)",
                self.dir,
            )
        self.evicted += removed
        return removed > 0

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
            self._remove_oldest()

    def _remove_oldest(self) -> None:
        name, size = self._files.popleft()
        self.bytes -= size
        try:
            (self.dir / name).unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            log.warning("snapshots: cannot remove %s (%s)", name, e.strerror)


def _block(directory: Path) -> int:
    try:
        st = os.statvfs(directory)
        return st.f_frsize or st.f_bsize or 4096
    except OSError:
        return 4096


def _free(directory: Path) -> int:
    """Bytes this user may still write on ``directory``'s file system (a lot: cannot tell)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return 2**62
    return st.f_bavail * (st.f_frsize or st.f_bsize or 4096)


def _blocks(size: int, block: int) -> int:
    """``size`` bytes rounded up to whole blocks."""
    return -(-size // block) * block


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
