"""The durable outbox: real SQLite files, a real second process, a real SIGKILL."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest

from edge_hf.errors import SinkError
from edge_hf.sinks.mqtt.spool import Spool, SpoolLimits
from tests.conftest import ROOT, mounted_tmpfs


def test_messages_come_back_oldest_first_after_reopening(tmp_path: Path):
    s = Spool(tmp_path)
    ids = [s.put(f"t/{i}", f"p{i}".encode()) for i in range(5)]
    s.close()
    s = Spool(tmp_path)
    assert [(m.id, m.topic, m.payload) for m in s.pending()] == [
        (i, f"t/{n}", f"p{n}".encode()) for n, i in enumerate(ids)
    ]
    assert (s.depth, s.size) == (5, 10)  # counters restored from the file
    assert [m.id for m in s.pending(after=ids[1], limit=2)] == ids[2:4]
    s.close()


def test_file_is_wal_with_full_sync(tmp_path: Path):
    s = Spool(tmp_path)
    s.put("t", b"x")
    assert s._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    s.close()
    with sqlite3.connect(tmp_path / Spool.FILENAME) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_delete_forgets_acknowledged_rows_and_ids_never_repeat(tmp_path: Path):
    s = Spool(tmp_path)
    a, b, c = (s.put("t", b"abc") for _ in range(3))
    assert s.delete([c, a, 999]) == 2  # unknown ids are ignored
    assert [m.id for m in s.pending()] == [b] and (s.depth, s.size) == (1, 3)
    d = s.put("t", b"abcd")
    assert d > c  # AUTOINCREMENT: a cursor at c does not skip the new row
    assert [m.id for m in s.pending(after=c)] == [d]
    s.close()


@pytest.mark.parametrize(
    ("limits", "sizes", "kept", "dropped"),
    [
        (SpoolLimits(max_rows=3), [10] * 5, [2, 3, 4], 2),
        (SpoolLimits(max_bytes=2048), [1000] * 4, [2, 3], 2),
        (SpoolLimits(max_bytes=2048), [100, 100, 3000], [2], 2),  # the newest always stays
        (SpoolLimits(max_rows=10), [10] * 5, [0, 1, 2, 3, 4], 0),
    ],
)
def test_limits_drop_the_oldest_and_count_them(tmp_path, caplog, limits, sizes, kept, dropped):
    caplog.set_level(logging.WARNING, "edge_hf.spool")
    s = Spool(tmp_path, limits)
    ids = [s.put("t", b"x" * n) for n in sizes]
    assert [m.id for m in s.pending()] == [ids[k] for k in kept]
    assert s.dropped == dropped and s.depth == len(kept)
    assert s.size == sum(sizes[k] for k in kept)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == (1 if dropped else 0)  # the first drop is announced, not each one
    if dropped:
        assert "is full" in warnings[0] and "dropped the oldest" in warnings[0]
    s.close()


def test_a_full_spool_gives_up_replaced_snapshots_before_any_event(tmp_path: Path):
    """Snapshots are retained: an older one on the same topic is overwritten on the broker
    anyway, so its bytes go before an event's; the last one per topic stays, and nothing
    that goes that way counts as a dropped alert."""
    s = Spool(tmp_path, SpoolLimits(max_bytes=4096))
    rows = []
    for n in range(4):
        rows.append(s.put("p/cam/fall/snapshot", b"j" * 1500, retain=True))
        rows.append(s.put("p/events", b"event %d" % n))
    kept = [(m.id, m.retain) for m in s.pending()]
    assert kept == [
        (rows[1], False),
        (rows[3], False),
        (rows[4], True),
        (rows[5], False),
        (rows[6], True),
        (rows[7], False),
    ]
    assert s.dropped == 0 and s.size <= 4096
    s.close()
    s = Spool(tmp_path)  # the flag is on disk
    assert [m.retain for m in s.pending()] == [False, False, True, False, True, False]
    s.close()


def test_a_spool_written_before_snapshots_were_spooled_gains_the_retain_column(tmp_path):
    with sqlite3.connect(tmp_path / Spool.FILENAME) as db:
        db.execute(
            "CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, "
            "created REAL NOT NULL, topic TEXT NOT NULL, payload BLOB NOT NULL)"
        )
        db.execute("INSERT INTO outbox (created, topic, payload) VALUES (0, 'p/events', 'old')")
    s = Spool(tmp_path)
    s.put("p/c/l/snapshot", b"jpeg", retain=True)
    assert [(m.payload, m.retain) for m in s.pending()] == [(b"old", False), (b"jpeg", True)]
    s.close()


def test_warnings_about_drops_thin_out(tmp_path: Path, caplog):
    caplog.set_level(logging.WARNING, "edge_hf.spool")
    s = Spool(tmp_path, SpoolLimits(max_rows=1))
    for _ in range(121):
        s.put("t", b"x")
    assert s.dropped == 120
    assert [r.getMessage().rsplit(", ", 1)[1] for r in caplog.records] == [
        "1 so far; is the broker reachable?",
        "10 so far; is the broker reachable?",
        "100 so far; is the broker reachable?",
    ]
    s.close()


CHILD = """
import os, signal, sys
from edge_hf.sinks.mqtt.spool import Spool
s = Spool(sys.argv[1])
for i in range(3):
    s.put("edge-hf/events", b"event %d" % i)
print("stored", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_put_that_returned_survives_sigkill(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == -9 and r.stdout == "stored\n", r.stderr
    s = Spool(tmp_path)  # the dead process's lock went with it
    assert [m.payload for m in s.pending()] == [b"event 0", b"event 1", b"event 2"]
    s.close()


def _under_a_file(t: Path) -> Path:
    (t / "afile").write_text("")  # fails for root too, unlike a read-only directory
    return t / "afile" / "state"


def _corrupt(t: Path) -> Path:
    (t / Spool.FILENAME).write_bytes(b"definitely not sqlite" * 100)
    return t


def _held(t: Path) -> Path:
    _held.spool = Spool(t)  # kept open by the test: another edge-hf
    return t


@pytest.mark.parametrize(
    ("make", "expect"),
    [
        (lambda t: t / "new" / "dir", nullcontext()),
        (_corrupt, pytest.raises(SinkError, match=r"spool\.sqlite3: file is not a database; move")),
        (_held, pytest.raises(SinkError, match="in use by another edge-hf process")),
        (_under_a_file, pytest.raises(SinkError, match="Not a directory.*make --state-dir writ")),
    ],
)
def test_unusable_state_directories_are_named_with_the_fix(tmp_path: Path, make, expect):
    with expect:
        Spool(make(tmp_path)).close()
    if getattr(_held, "spool", None):
        _held.spool.close()
        _held.spool = None


def test_limits_are_validated():
    with pytest.raises(SinkError, match="max_rows must be >= 1, found 0"):
        SpoolLimits(max_rows=0)
    with pytest.raises(SinkError, match="max_bytes must be >= 1024, found 10"):
        SpoolLimits(max_bytes=10)


def test_spool_files_are_private_whatever_the_umask(tmp_path: Path):
    old = os.umask(0o022)
    try:
        s = Spool(tmp_path / "state")
        s.put("t", b"x")
        names = [Spool.FILENAME, Spool.FILENAME + "-wal", Spool.FILENAME + "-shm", "spool.lock"]
        modes = {n: oct((tmp_path / "state" / n).stat().st_mode & 0o777) for n in names}
        s.close()
    finally:
        os.umask(old)
    assert modes == dict.fromkeys(names, "0o600")


def _fill(fs: Path) -> Path:
    """Take every free byte of the file system."""
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    with contextlib.suppress(OSError):
        while os.write(fd, b"\0" * 1024):
            pass
    os.close(fd)
    return filler


def test_a_full_file_system_keeps_alerts_in_order_and_deletes_still_commit(tmp_path, caplog):
    caplog.set_level(logging.WARNING, "edge_hf.spool")
    with mounted_tmpfs(tmp_path / "fs") as fs:
        s = Spool(fs)
        first = s.put("t", b"a" * 200)
        filler = _fill(fs)
        ids = [first]
        while not s.in_memory and len(ids) < 200:
            ids.append(s.put("t", b"b" * 200))
        ids += [s.put("t", b"c" * 200) for _ in range(5)]
        assert s.in_memory >= 6 and s.depth == len(ids)
        assert [m.id for m in s.pending(limit=1000)] == ids  # disk, then memory: in order
        assert s.delete([first, ids[-1]]) == 2  # one on disk (the reserve pays), one in memory
        assert [m.id for m in s.pending(limit=1000)] == ids[1:-1]
        filler.unlink()
        last = s.put("t", b"d" * 200)  # room again: memory goes to disk, ids and order kept
        assert s.in_memory == 0
        s.close()
        s = Spool(fs)
        assert [m.id for m in s.pending(limit=1000)] == [*ids[1:-1], last]
        assert s.wal_bytes() <= 128 * 1024
        s.close()
    errors = [r for r in caplog.records if "cannot write" in r.getMessage()]
    assert len(errors) == 1  # the first failed write, not one per alert
    assert "writing again; 6 alert(s) moved from memory to disk" in caplog.text
