"""Export errors. Each carries the exit code ``python -m export`` maps it to (see ``__main__``).

Anything the user supplied that is wrong raises one of these; the command prints its message as
one line on stderr. Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


class ExportError(Exception):
    exit_code = 1


class UsageError(ExportError):
    """A bad flag: an unknown format, an option that does not apply."""

    exit_code = 2


class CheckpointError(ExportError):
    """A checkpoint that is missing, unreadable, not ours, or without a spec."""

    exit_code = 3


class DataError(ExportError):
    """A calibration/validation dataset that is missing, empty or has other classes."""

    exit_code = 4


class OutputError(ExportError):
    """An output folder that already holds other files."""

    exit_code = 5


class ParityError(ExportError):
    """An exported model whose logits disagree with the trained model's."""

    exit_code = 6


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are UsageError: one line and exit 2, as every other error."""

    def error(self, message: str) -> None:  # one line, not usage + error
        raise UsageError(f"{message} (see --help)")


def command(name: str, work: Callable[[], str]) -> int:
    """Run an export command's ``work`` and print what it returns (exit 0); an ExportError is
    one line on stderr and its exit code, an interrupt 130 with nothing written."""
    try:
        text = work()
    except ExportError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted; nothing was written", file=sys.stderr)
        return 130
    print(text)
    return 0
