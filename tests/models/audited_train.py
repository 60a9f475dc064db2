"""``python -m models.train`` with an audit hook (PEP 578) that records every file this process
opens for writing, renames, removes or creates under ``$AUDIT_ROOT``, listed at exit in
``$AUDIT_ROOT/../written-rank$RANK.txt``: how tests/models/test_distributed.py sees that the
ranks other than 0 write nothing. Run as ``torchrun ... -m tests.models.audited_train ARGS``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(os.environ["AUDIT_ROOT"]).resolve()
WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
written: list[str] = []


def _under(path) -> bool:
    try:
        return Path(os.fsdecode(path)).resolve().is_relative_to(ROOT)
    except (TypeError, ValueError):  # a file descriptor, not a path
        return False


def _hook(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = args
        writes = any(c in (mode or "") for c in "wax+") or bool((flags or 0) & WRITES)
        if writes and _under(path):
            written.append(f"open {os.fsdecode(path)}")
    elif event in ("os.rename", "os.remove", "os.mkdir", "os.rmdir") and _under(args[0]):
        written.append(f"{event} {os.fsdecode(args[0])}")


def main() -> int:
    report = ROOT.parent / f"written-rank{os.environ.get('RANK', '0')}.txt"
    fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # before the hook: not counted
    sys.addaudithook(_hook)
    from models.train import main as train

    try:
        return train(sys.argv[1:])
    finally:
        os.write(fd, "".join(f"{w}\n" for w in written).encode())
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
