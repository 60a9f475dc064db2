"""Our error types. Each carries the CLI exit code it maps to (the README's exit code table).

Anything a user supplied that is wrong raises one of these; the CLI prints its message as one
line on stderr and exits with its code. Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations


class EdgeHFError(Exception):
    """Base class: a problem the user can act on."""

    exit_code = 1


class UsageError(EdgeHFError):
    """Bad command-line value or config key."""

    exit_code = 2


class SpecError(EdgeHFError):
    """A hyperframe spec that is malformed or inconsistent."""

    exit_code = 3


class ModelError(EdgeHFError):
    """A model file that is missing, unreadable, foreign or disagrees with its spec."""

    exit_code = 3


class SourceError(EdgeHFError):
    """A camera, stream or file that cannot be used."""

    exit_code = 4


class SinkError(EdgeHFError):
    """An alert sink that cannot be set up."""

    exit_code = 5
