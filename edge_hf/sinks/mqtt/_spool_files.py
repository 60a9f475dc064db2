"""The spool's files: the SQLite connection (WAL, bounded), the directory lock, the reserve,
and their permissions (0600). Plumbing for ``edge_hf.sinks.mqtt.spool``."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
from pathlib import Path

from edge_hf.errors import SinkError

log = logging.getLogger("edge_hf.spool")

SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    topic TEXT NOT NULL,
    payload BLOB NOT NULL,
    retain INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS rejected (
    id INTEGER PRIMARY KEY,
    created REAL,
    topic,
    payload,
    reason TEXT NOT NULL
);
"""
WAL_PAGES = 16  # wal_autocheckpoint: checkpoint once this many pages (64 KiB) are in the WAL
WAL_LIMIT = 64 * 1024  # journal_size_limit: a reset WAL file is truncated back to this
RESERVE = 64 * 1024  # bytes of the file system held back for deletes


class Reserve:
    """A file holding ``RESERVE`` bytes of the file system, given up when a delete needs them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held = False

    def take(self) -> bool:
        if self.held:
            return True
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(fd, 0, RESERVE)
            finally:
                os.close(fd)
        except OSError:
            self.release()
            return False
        self.held = True
        return True

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.truncate(self.path, 0)
        self.held = False


def checkpoint(db: sqlite3.Connection) -> None:
    """Copy the WAL into the database and truncate it to nothing (best effort)."""
    with contextlib.suppress(sqlite3.Error):
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def make_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does (its -wal and -shm files take the
    database file's mode), and make files an earlier version left 0644 private too."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(p, 0o600)


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if mode.lower() != "wal":
        log.warning("spool %s: journal mode %s, not WAL (file system?)", path, mode)
    db.execute("PRAGMA synchronous=FULL")
    db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
    db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
    db.executescript(SCHEMA)
    columns = {row[1] for row in db.execute("PRAGMA table_info(outbox)")}
    if "retain" not in columns:  # a spool from a version that spooled events only
        db.execute("ALTER TABLE outbox ADD COLUMN retain INTEGER NOT NULL DEFAULT 0")
    return db


def lock_directory(directory: Path, path: Path):
    """Create the state directory (0700) and hold an exclusive lock on ``spool.lock`` in it."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(directory / "spool.lock", os.O_RDWR | os.O_CREAT, 0o600)
        f = os.fdopen(fd, "r+b")
    except OSError as e:
        raise SinkError(
            f"spool {path}: cannot create it ({e.strerror}); make --state-dir writable "
            f"by the user edge-hf runs as, or choose another"
        ) from None
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise SinkError(
            f"spool {path} is in use by another edge-hf process; give each one its own --state-dir"
        ) from None
    os.set_inheritable(f.fileno(), False)
    return f
