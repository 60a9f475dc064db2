"""What the workstation's commands share on the command line: an argparse whose errors are
``BadArguments``, the runner that turns a ``WorkstationError`` into one line and its exit code,
and the argument types several commands take."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from edge_hf.errors import SpecError
from edge_hf.spec import parse_threshold
from models.errors import BadArguments, WorkstationError


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are BadArguments: one line and exit 2, as every other error."""

    def error(self, message: str) -> None:  # one line, not usage + error
        raise BadArguments(f"{message} (see --help)")


def command(name: str, work: Callable[[], str]) -> int:
    """Run a command's ``work`` and print what it returns (exit 0); a WorkstationError is one
    line on stderr and its exit code, an interrupt 130 with nothing written."""
    try:
        text = work()
    except WorkstationError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted; nothing was written", file=sys.stderr)
        return 130
    print(text)
    return 0


def threshold_arg(text: str) -> tuple[str, float]:
    """``--threshold CLASS=P`` for argparse: the spec's own check, its message as argparse's."""
    try:
        return parse_threshold(text)
    except SpecError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--threshold: ")) from None
