"""The README and docs/ stay true: every command in their ``sh`` blocks names a module that
exists, and its options parse with that command's own argument parser (run in-process and
stopped right after parsing, so nothing is trained, exported or opened). Make targets named
there exist in the Makefile. Lines with placeholders the shell cannot take (``[...]``, ``…``)
are skipped, and a line may end in a comment."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```(?:sh|bash|console)\n(.*?)```", re.S)
PREFIXES = (".venv/bin/", "/opt/edge-hf/.venv/bin/", "sudo ")


class _Parsed(BaseException):  # not an Exception: no command's own handler catches it
    pass


def commands(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, argv) of each command in ``path``'s shell blocks, continuation lines
    joined, environment assignments and comments dropped."""
    text = path.read_text()
    out = []
    for m in BLOCK.finditer(text):
        first = text[: m.start(1)].count("\n") + 1
        body = m.group(1).replace("\\\n", " ")
        for i, line in enumerate(body.splitlines()):
            if "[" in line.split("#")[0] or "…" in line or "..." in line:
                continue
            try:
                argv = shlex.split(line, comments=True)
            except ValueError:
                continue
            while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
                argv = argv[1:]
            if argv:
                for p in PREFIXES:
                    argv[0] = argv[0].removeprefix(p)
                out.append((first + i, argv))
    return out


def ours(argv: list[str]) -> tuple[str, list[str]] | None:
    """The module and its arguments, for a command of this project; None for anything else."""
    if argv[0] == "edge-hf":
        return "edge_hf", argv[1:]
    if argv[0] in ("python", "python3") and argv[1:2] == ["-m"] and len(argv) > 2:
        module = argv[2]
        if module.split(".")[0] in ("edge_hf", "models", "export", "bench"):
            return module, argv[3:]
    return None


def all_commands() -> list:
    found = []
    for path in DOCS:
        for line, argv in commands(path):
            mod = ours(argv)
            if mod:
                found.append(pytest.param(*mod, id=f"{path.name}:{line}"))
    return found


def _stop_after_parsing(self, args=None, namespace=None):
    raise _Parsed(_original(self, args, namespace))


_original = argparse.ArgumentParser.parse_args


@pytest.mark.parametrize(("module", "args"), all_commands())
def test_a_documented_command_parses(module: str, args: list[str], monkeypatch):
    from edge_hf.errors import UsageError

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", _stop_after_parsing)
    monkeypatch.setattr(sys, "argv", [module, *args])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except _Parsed:
            return
        except UsageError as e:
            pytest.fail(f"{module} {shlex.join(args)}: {e}")
        except SystemExit as e:
            if e.code not in (0, None):
                pytest.fail(f"{module} {shlex.join(args)}: exit {e.code}: {err.getvalue()}")
            return
    pytest.fail(f"{module} {shlex.join(args)}: finished without parsing any arguments")


def test_make_targets_named_in_the_docs_exist():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", makefile, re.M))
    named = {
        (path.name, argv[1])
        for path in DOCS
        for _, argv in commands(path)
        if argv[0] == "make" and len(argv) > 1 and "=" not in argv[1]
    }
    assert named, "no make command found in the docs"
    assert {t for _, t in named} <= targets, sorted(named)


def test_the_commands_are_found():
    """The scan itself can fail: the README's own run and train commands are among them."""
    found = {(m, a[0] if a else "") for m, a in (p.values for p in all_commands())}
    assert ("edge_hf", "run") in found and any(m == "models.train" for m, _ in found)
