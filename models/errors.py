"""The workstation's error types, for models/ and export/ alike (the device has its own,
``edge_hf.errors``; these names repeat none of them). Each carries the exit code of the export's
table (``python -m export``, ``python -m export.heldout``: see their docstrings);
``python -m models.train`` and ``python -m models.evaluate`` exit 2 on any of them.

Anything the user supplied that is wrong raises one of these; the command prints its message as
one line on stderr (``models.cli.command``). Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations


class WorkstationError(Exception):
    """Base class: a problem the user can act on."""

    exit_code = 1


class BadArguments(WorkstationError):
    """A bad flag or recipe: an unknown format or key, an option that does not apply."""

    exit_code = 2


class BadCheckpoint(WorkstationError):
    """A checkpoint (or export folder) that is missing, unreadable, not ours, or without a spec."""

    exit_code = 3


class BadData(WorkstationError):
    """A dataset that is missing, empty, mislabelled or has other classes; the message says which
    file and how to fix it."""

    exit_code = 4


class OutputExists(WorkstationError):
    """An output folder that already holds other files, or an output that cannot be written."""

    exit_code = 5


class ParityFailed(WorkstationError):
    """An exported model whose logits disagree with the trained model's."""

    exit_code = 6
