"""Plumbing shared by the live fixtures: ports, bounded waits, child processes and their logs.

Every listening socket is on ``HOST``. Children run in their own process group with stdout/stderr
going to the fixture's log file, and are killed on ``close()``, or at interpreter exit as a last
resort.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO

HOST = "127.0.0.1"

# --------------------------------------------------------------------------- ports and waits


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def free_udp_port_block(count: int = 32, lo: int = 30000, hi: int = 60000, tries: int = 200) -> int:
    """An even port p such that UDP p .. p+count-1 on 127.0.0.1 were all free a moment ago."""
    rng = random.Random()
    for _ in range(tries):
        base = rng.randrange(lo, hi - count) & ~1
        socks = []
        try:
            for p in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind((HOST, p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no block of {count} free UDP ports found")


def port_accepts(port: int, timeout: float = 0.2) -> bool:
    """True if a TCP connect to 127.0.0.1:``port`` succeeds."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until it is truthy (True) or ``timeout`` seconds pass (False).

    An exception from ``predicate`` counts as "not yet".
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return True
        except Exception:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


# --------------------------------------------------------------------------- child processes

_live_procs: weakref.WeakSet[subprocess.Popen] = weakref.WeakSet()

# If the test process is SIGKILLed, atexit never runs; children in their own session would
# then loop forever. `setpriv --pdeathsig KILL` (util-linux) makes the kernel kill them when
# the thread that spawned them exits. (So start servers from a thread that outlives them,
# e.g. the test's own thread.)
_PDEATHSIG = (
    ["setpriv", "--pdeathsig", "KILL", "--"]
    if sys.platform.startswith("linux") and shutil.which("setpriv")
    else []
)


def spawn(cmd: list, log: IO[bytes], **kw) -> subprocess.Popen:
    """Start ``cmd`` in its own process group, stderr (and stdout unless given) to ``log``."""
    log.write(("\n$ " + " ".join(map(str, cmd)) + "\n").encode())
    log.flush()
    kw.setdefault("stdout", log)
    p = subprocess.Popen(
        [*_PDEATHSIG, *(str(c) for c in cmd)],
        stdin=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,  # own process group: killpg takes any grandchildren too
        **kw,
    )
    _live_procs.add(p)
    return p


def kill(p: subprocess.Popen | None, grace: float = 1.0) -> None:
    """SIGTERM the process group, SIGKILL after ``grace`` seconds; always reaps."""
    if p is None:
        return
    if p.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(p.pid, sig)
            except (ProcessLookupError, PermissionError):
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(sig)
            try:
                p.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    if p.stdout is not None:  # a pipe; stderr always goes to the log file
        with contextlib.suppress(OSError):
            p.stdout.close()
    _live_procs.discard(p)


@atexit.register
def _kill_leftovers() -> None:  # last resort if a test forgot close()
    for p in list(_live_procs):
        kill(p, grace=0.2)


# --------------------------------------------------------------------------- fixture base


class LiveFixture:
    """Log file handling and the context-manager protocol shared by the servers.

    Subclasses call ``_open_log`` last in ``__init__`` (so a failing ``__init__`` leaves no
    log behind) and implement ``start()`` and an idempotent ``close()`` that ends with
    ``_close_log()``.
    """

    log_path: Path
    _log: IO[bytes]
    _log_is_temp: bool = False

    def log_text(self) -> str:
        """Everything the fixture's child processes have logged so far ("" if unreadable)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _open_log(self, log_path: str | os.PathLike | None, stem: str) -> None:
        """Open the children's log (append); without ``log_path``, a temporary file."""
        self._log_is_temp = log_path is None
        if log_path is None:
            fd, log_path = tempfile.mkstemp(prefix=f"edgehf-{stem}-", suffix=".log")
            os.close(fd)
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab", buffering=0)  # noqa: SIM115 - lives until close()

    def _close_log(self) -> None:
        """Close the log; a temporary one is deleted unless EDGEHF_LIVE_KEEP_LOGS is set."""
        with contextlib.suppress(AttributeError, OSError):
            self._log.close()
        if self._log_is_temp and not os.environ.get("EDGEHF_LIVE_KEEP_LOGS"):
            with contextlib.suppress(OSError):
                self.log_path.unlink()

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()
