"""Why a file the user named cannot be read, in words (not "system error number 13")."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def file_problem(path: Path) -> str | None:
    """None if ``path`` is a regular file this process can open for reading, else what is
    wrong, phrased to follow the file's name: "does not exist", "is a directory, not a file"…"""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            return "is a directory, not a file"
        if not stat.S_ISREG(mode):  # a FIFO would block the open below
            return "is not a regular file"
        with open(path, "rb"):
            return None
    except FileNotFoundError:
        return "does not exist"
    except PermissionError:
        return (
            f"cannot be read: permission denied for this user ({_user()}); the file and every "
            "directory above it must be readable by it (under systemd: not below /home or /root, "
            "which ProtectHome= hides)"
        )
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            return "cannot be opened: the name is too long for the file system"
        if e.errno == errno.ENOTDIR:
            return "does not exist (a part of its path is a file, not a directory)"
        return f"cannot be opened: {e.strerror or e}"
    except ValueError:  # an embedded NUL
        return "cannot be opened: the name contains a NUL character"


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return f"uid {os.geteuid()}"


def secret_there(path: Path) -> bool:
    """Exists, or cannot be looked at (EACCES, a name too long): read_secret then says why."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return True


def read_secret(path: Path, what: str, error: type[Exception], secret_of: str) -> str:
    """A password kept in a file (trailing newline dropped), or ``error`` saying why not:
    ``what`` names where it came from, ``secret_of`` whose password belongs there."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) else "not UTF-8 text or a bad name"
        raise error(
            f"{what} {path}: cannot read it ({reason}); it must be readable by the user "
            f"edge-hf runs as"
        ) from None
    secret = text.rstrip("\r\n")
    if not secret:
        raise error(f"{what} {path} is empty; write {secret_of} into it")
    return secret
