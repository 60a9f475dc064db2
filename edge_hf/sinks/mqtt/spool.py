"""A durable outbox for alerts: a message is committed to disk before it is published and
deleted only when the broker acknowledged it, so neither a broker outage nor a crash of this
process loses one.

SQLite in WAL mode with ``synchronous=FULL``: a ``put`` that returned ``True`` survives a power
cut. The table is bounded by rows and by payload bytes; when full, a retained message (a
snapshot) that a newer one on its topic replaces anyway goes first, then the *oldest* rows
(the newest alert is the one someone is waiting for), counted, and warned about.

Events are spooled, and so are the retained snapshots published before them (``retain``): one
id sequence, so a snapshot is delivered before its event even across an outage or a restart.

A full (or failing) file system does not lose alerts either, as long as this process lives:

- the WAL is kept small (``wal_autocheckpoint``, ``journal_size_limit``), so it cannot grow
  without bound and refill the space that deletes free;
- ``spool.reserve`` holds ``RESERVE`` bytes of the file system: when a delete of acknowledged rows
  cannot be committed, the reserve is given up, the delete committed and the reserve taken back.
  New alerts are written only while the reserve is held, so acknowledged rows can always go
  (otherwise they would be re-sent, as duplicates, on every reconnect and restart);
- an alert that cannot be written waits in memory (at most ``MEMORY_MAX``), and so does every
  later one until all of them can be written, oldest first. Ids are one sequence over disk and
  memory, and memory only ever holds the newest ids, so delivery order is kept.

One process per spool: a second ``Spool`` on the same file (another edge-hf with the same
state directory) is refused, because two publishers would each delete the other's rows. The
files are private to the user (0600): alerts say what happened where.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from edge_hf.errors import SinkError
from edge_hf.sinks.mqtt._spool_files import (
    Reserve,
    checkpoint,
    connect,
    lock_directory,
    make_private,
)

log = logging.getLogger("edge_hf.spool")

MEMORY_MAX = 1000  # alerts kept in memory while the disk cannot take them
REJECTED_MAX = 100  # unpublishable rows kept aside for a person to look at
# the spool is over its limits: what goes first (fetchall: step a RETURNING statement to its end)
SUPERSEDED = """DELETE FROM outbox WHERE id = (
    SELECT min(a.id) FROM outbox a WHERE a.retain AND a.id != ? AND EXISTS (
        SELECT 1 FROM outbox b WHERE b.retain AND b.topic = a.topic AND b.id > a.id))
RETURNING length(payload)"""
OLDEST = """DELETE FROM outbox WHERE id = (SELECT min(id) FROM outbox WHERE id != ?)
RETURNING length(payload)"""


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
    retain: bool = False  # published retained (a snapshot), else an event


class Spool:
    """Thread-safe: one connection behind a lock (the frame loop puts, the sink deletes)."""

    FILENAME = "spool.sqlite3"

    def __init__(self, directory: Path, limits: SpoolLimits | None = None) -> None:
        self.path = Path(directory) / self.FILENAME
        self.limits = limits or SpoolLimits()
        self.dropped = 0  # rows dropped to honour the limits, since this process started
        self.rejected = 0  # rows set aside because they cannot be published
        self.write_failures = 0  # puts the disk refused (the alert waited in memory)
        self._memory: deque[Spooled] = deque()  # the newest alerts, when the disk refused them
        self._acked: set[int] = set()  # acknowledged, but the delete is not committed yet
        self._lock = threading.RLock()
        self._lockfile = lock_directory(Path(directory), self.path)
        self._reserve = Reserve(Path(directory) / "spool.reserve")
        try:
            make_private(self.path)
        except OSError as e:
            self._lockfile.close()
            raise SinkError(
                f"spool {self.path}: cannot create it ({e.strerror}); make --state-dir "
                f"writable by the user edge-hf runs as, or choose another"
            ) from None
        try:
            self._db = connect(self.path)
            self._recount()
            seq = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'")
            self._last_id = max([int(r[0]) for r in seq.fetchall()] + [self._max_id()])
        except sqlite3.Error as e:
            self._lockfile.close()
            raise SinkError(
                f"spool {self.path}: {e}; move the file aside (alerts in it are lost) "
                f"or choose another --state-dir"
            ) from None
        self._reserve.take()

    @property
    def depth(self) -> int:
        return self._disk_depth + len(self._memory)

    @property
    def size(self) -> int:
        with self._lock:  # the frame loop may be appending to the memory queue
            return self._disk_size + sum(len(m.payload) for m in self._memory)

    @property
    def in_memory(self) -> int:
        return len(self._memory)

    def put(self, topic: str, payload: bytes, retain: bool = False) -> int:
        """Store one message and return its id. It is on disk (committed and fsynced) unless
        the disk refused it (``in_memory`` > 0); either way it will be delivered in order."""
        with self._lock:
            self._last_id += 1
            self._memory.append(Spooled(self._last_id, topic, payload, retain))
            while len(self._memory) > MEMORY_MAX:
                self._memory.popleft()
                self._warn_dropped(1)
            self._flush_memory()
            return self._last_id

    def _flush_memory(self, need_reserve: bool = True) -> bool:
        """Write every alert waiting in memory, oldest first, in one transaction."""
        if not self._memory:
            return True
        try:
            if need_reserve and not self._reserve.take():
                raise sqlite3.OperationalError("no room for the spool's reserve")
            with self._transaction() as db:
                db.executemany(
                    "INSERT INTO outbox (id, created, topic, payload, retain) VALUES (?, ?, ?, ?, ?)",
                    [(m.id, time.time(), m.topic, m.payload, m.retain) for m in self._memory],
                )
                n, size = len(self._memory), sum(len(m.payload) for m in self._memory)
                self._disk_depth, self._disk_size = self._disk_depth + n, self._disk_size + size
                dropped = self._enforce_limits(self._memory[-1].id)
        except sqlite3.Error as e:
            self._write_failed(e)
            return False
        if self.write_failures:
            log.warning(
                "spool %s: writing again; %d alert(s) moved from memory to disk",
                self.path,
                len(self._memory),
            )
            self.write_failures = 0
        self._memory.clear()
        if dropped:
            self._warn_dropped(dropped)
        return True

    def _write_failed(self, e: sqlite3.Error) -> None:
        before, self.write_failures = self.write_failures, self.write_failures + 1
        if _first_or_power_of_ten(before, self.write_failures):
            log.error(
                "spool %s: cannot write (%s); %d alert(s) wait in memory, in order, until it "
                "can (%d failed write(s) so far; they are lost if edge-hf stops first); "
                "free space in --state-dir",
                self.path,
                e,
                len(self._memory),
                self.write_failures,
            )

    def _enforce_limits(self, newest: int) -> int:
        """Delete rows (never ``newest``) until within the limits: first retained messages a
        newer one on the same topic replaces anyway (a snapshot's bytes must not push events
        out), then the oldest rows, counted."""
        lim, dropped = self.limits, 0
        while self._disk_depth > lim.max_rows or (
            self._disk_size > lim.max_bytes and self._disk_depth > 1
        ):
            rows = self._db.execute(SUPERSEDED, (newest,)).fetchall()
            if not rows:
                rows = self._db.execute(OLDEST, (newest,)).fetchall()
                dropped += len(rows)
            if not rows:
                break
            self._disk_depth, self._disk_size = self._disk_depth - 1, self._disk_size - rows[0][0]
        return dropped

    def _warn_dropped(self, n: int) -> None:
        before, self.dropped = self.dropped, self.dropped + n
        if _first_or_power_of_ten(before, self.dropped):
            log.warning(
                "spool %s is full (%d rows, %d bytes; limits %d rows, %d bytes; %d in memory): "
                "dropped the oldest alert(s), %d so far; is the broker reachable?",
                self.path,
                self._disk_depth,
                self._disk_size,
                self.limits.max_rows,
                self.limits.max_bytes,
                len(self._memory),
                self.dropped,
            )

    def pending(self, after: int = 0, limit: int = 100) -> list[Spooled]:
        """Up to ``limit`` messages with id > ``after``, oldest first (disk, then memory).
        A row that is not a text topic and a text or blob payload is set aside."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, topic, payload, retain FROM outbox WHERE id > ? ORDER BY id LIMIT ?",
                (after, limit + len(self._acked)),
            ).fetchall()
            out = []
            for i, topic, payload, retain in rows:
                if i in self._acked:
                    continue
                if isinstance(payload, str):
                    payload = payload.encode()
                if not isinstance(topic, str) or not topic or not isinstance(payload, bytes):
                    self.reject(
                        i, f"topic {type(topic).__name__}, payload {type(payload).__name__}"
                    )
                    continue
                out.append(Spooled(int(i), topic, payload, bool(retain)))
            out += [m for m in self._memory if m.id > after]
            return out[:limit]

    def reject(self, spool_id: int, reason: str, say: bool = True) -> None:
        """Set aside a message that can never be published (table ``rejected``, the newest
        ``REJECTED_MAX`` kept), so it neither blocks the queue nor vanishes without a word
        (``say=False``: the caller says it, rate-limited)."""
        with self._lock:
            before = len(self._memory)
            self._memory = deque(m for m in self._memory if m.id != spool_id)
            if len(self._memory) == before:
                with contextlib.suppress(sqlite3.Error), self._transaction() as db:
                    db.execute(
                        "INSERT OR REPLACE INTO rejected SELECT id, created, topic, payload, ? "
                        "FROM outbox WHERE id = ?",
                        (reason, spool_id),
                    )
                    db.execute("DELETE FROM outbox WHERE id = ?", (spool_id,))
                    db.execute(
                        "DELETE FROM rejected WHERE id NOT IN "
                        "(SELECT id FROM rejected ORDER BY id DESC LIMIT ?)",
                        (REJECTED_MAX,),
                    )
                self._recount()
            self.rejected += 1
        if not say:
            return
        log.error(
            "spool %s: alert %d can never be published (%s); set aside in the table 'rejected' "
            "(%d so far)",
            self.path,
            spool_id,
            reason,
            self.rejected,
        )

    def delete(self, ids: Iterable[int]) -> int:
        """Forget acknowledged messages; unknown ids are ignored. Returns how many went. When
        the disk is full, the reserve is given up for the delete; if even that fails, the ids
        are remembered (never re-sent by this process) and the delete is tried again later."""
        with self._lock:
            ids = set(ids)
            before = len(self._memory)
            self._memory = deque(m for m in self._memory if m.id not in ids)
            gone = before - len(self._memory)
            self._acked |= ids
            if not self._acked:
                return gone
            try:
                gone += self._delete_acked()
            except sqlite3.OperationalError:
                self._reserve.release()  # the room kept for exactly this
                checkpoint(self._db)
                try:
                    gone += self._delete_acked()
                except sqlite3.Error as e:
                    self._write_failed(e)
                checkpoint(self._db)
                self._reserve.take()
            return gone

    def _delete_acked(self) -> int:
        gone = 0
        with self._transaction() as db:
            for i in sorted(self._acked):
                for (n,) in db.execute(
                    "DELETE FROM outbox WHERE id = ? RETURNING length(payload)", (i,)
                ).fetchall():
                    gone, self._disk_depth, self._disk_size = (
                        gone + 1,
                        self._disk_depth - 1,
                        self._disk_size - n,
                    )
        self._acked.clear()
        return gone

    @contextlib.contextmanager
    def _transaction(self):
        """One committed write transaction; the caller holds the lock. On any failure roll back
        and recount, so depth and size never drift from the disk."""
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
            self._disk_depth, self._disk_size = int(row[0]), int(row[1])

    def _max_id(self) -> int:
        return int(self._db.execute("SELECT coalesce(max(id), 0) FROM outbox").fetchone()[0])

    def wal_bytes(self) -> int:
        wal = self.path.with_name(self.path.name + "-wal")
        return wal.stat().st_size if wal.exists() else 0

    def close(self) -> None:
        """Last chance for alerts waiting in memory to reach the disk, then close."""
        with self._lock:
            if self._memory:
                self._reserve.release()
                if not self._flush_memory(need_reserve=False):
                    log.error(
                        "spool %s: %d alert(s) could not be written and are lost",
                        self.path,
                        len(self._memory),
                    )
            with contextlib.suppress(sqlite3.Error):
                checkpoint(self._db)
                self._db.close()
            self._lockfile.close()


def _first_or_power_of_ten(before: int, now: int) -> bool:
    """Log the first time, then at every power of ten: visible, but not a line per alert."""
    return before == 0 or len(str(before)) != len(str(now))
