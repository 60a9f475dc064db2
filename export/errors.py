"""Export errors. Each carries the exit code ``python -m export`` maps it to (see ``__main__``).

Anything the user supplied that is wrong raises one of these; the command prints its message as
one line on stderr. Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations


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
