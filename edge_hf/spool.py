"""A durable outbox for alerts: a message is committed to disk before it is published and
deleted only when the broker acknowledged it, so neither a broker outage nor a crash of this
process loses one.

SQLite in WAL mode with ``synchronous=FULL``: a ``put`` that returned survives a power cut. The
table is bounded by rows and by payload bytes; when full, the *oldest* rows are dropped (the
newest alert is the one someone is waiting for), counted, and warned about. Row ids never repeat
(AUTOINCREMENT), so a reader can walk the table with an ``id > cursor`` bookmark.

One process per spool: a second ``Spool`` on the same file (another edge-hf with the same
state directory) is refused, because two publishers would each delete the other's rows.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from edge_hf.errors import SinkError

log = logging.getLogger("edge_hf.spool")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    topic TEXT NOT NULL,
    payload BLOB NOT NULL
)
"""


@dataclass(frozen=True)
class SpoolLimits:
    max_rows: int = 10_000
    max_bytes: int = 16 * 1024 * 1024  # sum of payload sizes

    def __post_init__(self) -> None:
        if self.max_rows < 1:
            raise SinkError(f"spool max_rows must be >= 1, found {self.max_rows}")
        if self.max_bytes < 1024:
            raise SinkError(f"spool max_bytes must be >= 1024, found {self.max_bytes}")


class Spooled(NamedTuple):
    id: int
    topic: str
    payload: bytes


class Spool:
    """Thread-safe: one connection behind a lock (the frame loop puts, the sink deletes)."""

    FILENAME = "spool.sqlite3"

    def __init__(self, directory: Path, limits: SpoolLimits | None = None) -> None:
        self.path = Path(directory) / self.FILENAME
        self.limits = limits or SpoolLimits()
        self.dropped = 0  # rows dropped to honour the limits, since this process started
        self._lock = threading.Lock()
        self._lockfile = _lock_directory(Path(directory), self.path)
        try:
            self._db = _connect(self.path)
            row = self._db.execute("SELECT count(*), total(length(payload)) FROM outbox").fetchone()
        except sqlite3.Error as e:
            self._lockfile.close()
            raise SinkError(
                f"spool {self.path}: {e}; move the file aside (alerts in it are lost) "
                f"or choose another --state-dir"
            ) from None
        self.depth, self.size = int(row[0]), int(row[1])

    def put(self, topic: str, payload: bytes) -> int:
        """Store one message durably (committed and fsynced) and return its id."""
        with self._transaction() as db:
            cur = db.execute(
                "INSERT INTO outbox (created, topic, payload) VALUES (?, ?, ?)",
                (time.time(), topic, payload),
            )
            self.depth, self.size = self.depth + 1, self.size + len(payload)
            dropped = self._enforce_limits(cur.lastrowid)
        if dropped:
            self._warn_dropped(dropped)
        return cur.lastrowid

    def _enforce_limits(self, newest: int) -> int:
        """Delete the oldest rows (never ``newest``) until within the limits; count them."""
        lim, dropped = self.limits, 0
        while self.depth > lim.max_rows or (self.size > lim.max_bytes and self.depth > 1):
            rows = self._db.execute(  # fetchall: step a RETURNING statement to its end
                "DELETE FROM outbox WHERE id = (SELECT min(id) FROM outbox WHERE id != ?) "
                "RETURNING length(payload)",
                (newest,),
            ).fetchall()
            if not rows:
                break
            self.depth, self.size = self.depth - 1, self.size - int(rows[0][0])
            dropped += 1
        return dropped

    def _warn_dropped(self, n: int) -> None:
        before, self.dropped = self.dropped, self.dropped + n
        # the first drop, then at every power of ten: visible, but not a line per alert
        if before == 0 or len(str(before)) != len(str(self.dropped)):
            log.warning(
                "spool %s is full (%d rows, %d bytes; limits %d rows, %d bytes): dropped the "
                "oldest alert(s), %d so far; is the broker reachable?",
                self.path,
                self.depth,
                self.size,
                self.limits.max_rows,
                self.limits.max_bytes,
                self.dropped,
            )

    def pending(self, after: int = 0, limit: int = 100) -> list[Spooled]:
        """Up to ``limit`` messages with id > ``after``, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, topic, payload FROM outbox WHERE id > ? ORDER BY id LIMIT ?",
                (after, limit),
            ).fetchall()
        return [Spooled(int(i), t, bytes(p)) for i, t, p in rows]

    def delete(self, ids: Iterable[int]) -> int:
        """Forget acknowledged messages; unknown ids are ignored. Returns how many went."""
        ids = list(ids)
        if not ids:
            return 0
        gone = 0
        with self._transaction() as db:
            for i in ids:
                for (n,) in db.execute(
                    "DELETE FROM outbox WHERE id = ? RETURNING length(payload)", (i,)
                ).fetchall():
                    gone, self.depth, self.size = gone + 1, self.depth - 1, self.size - n
        return gone

    @contextlib.contextmanager
    def _transaction(self):
        """One committed write transaction under the lock; on any failure roll back and
        recount, so depth and size never drift from the disk."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                self._recount()
                raise

    def _recount(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            row = self._db.execute("SELECT count(*), total(length(payload)) FROM outbox").fetchone()
            self.depth, self.size = int(row[0]), int(row[1])

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._lockfile.close()


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if mode.lower() != "wal":
        log.warning("spool %s: journal mode %s, not WAL (file system?)", path, mode)
    db.execute("PRAGMA synchronous=FULL")
    db.execute(_SCHEMA)
    return db


def _lock_directory(directory: Path, path: Path):
    """Create the state directory (0700) and hold an exclusive lock on ``spool.lock`` in it."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        f = open(directory / "spool.lock", "a+b")  # noqa: SIM115 - held until close()
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
