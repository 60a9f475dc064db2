"""Export tests: skipped where the workstation extra is not installed. A tiny checkpoint (64 px,
one epoch on a few synthetic clips) is trained once per session and exported once, by the real
command in a subprocess; the other tests read what it wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

for _mod in ("torch", "timm", "onnx", "openvino", "nncf"):
    pytest.importorskip(_mod, reason="export needs the [train] extra (torch, timm, openvino, nncf)")

from tests.conftest import built_once, run_module  # noqa: E402

SIZE = 64
# --subset-size 100: the tiny model needs no more, and the choice of ranges calibrates three times.
EXPORT_ARGS = ["--formats", "onnx,openvino,openvino-int8", "--threshold", "fall=0.9"]
EXPORT_ARGS += ["--subset-size", "100"]


@pytest.fixture(scope="session")
def tiny_ckpt(tiny_actions: Path, tmp_path_factory) -> Path:
    from models.config import parse
    from models.train import train

    with built_once(tmp_path_factory, "train") as (tmp, todo):
        if todo:
            argv = ["--recipe", "realtime-cpu", "--data", str(tiny_actions), "--size", str(SIZE)]
            argv += ["--epochs", "2", "--batch", "8", "--samples-per-clip", "2", "--name", "tiny"]
            argv += ["--soup", "1"]  # one run, not the recipe's three members: the export is alike
            argv += ["--out", str(tmp / "runs"), "--cache", str(tmp / "cache")]
            train(parse(argv))
    return tmp / "runs" / "tiny" / "best.pt"


def run_export(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m export ARGS`` as a real subprocess of this interpreter."""
    return run_module("export", *args, timeout=300)


@pytest.fixture(scope="session")
def exported(tiny_ckpt: Path, tmp_path_factory) -> Path:
    with built_once(tmp_path_factory, "exported") as (tmp, todo):
        out = tmp / "tiny"
        if todo:
            out.mkdir(exist_ok=True)
            (out / "stale.txt").write_text("from an earlier export; --force replaces the folder\n")
            r = run_export(
                str(tiny_ckpt), *EXPORT_ARGS, "--out", str(out), "--force", "--repeats", "3"
            )
            assert r.returncode == 0, r.stderr
            assert r.stdout.startswith(f"wrote {out}"), r.stdout
    return out


@pytest.fixture(scope="session")
def report(exported: Path) -> dict:
    return json.loads((exported / "report.json").read_text())


@pytest.fixture(scope="session")
def tuned_export(tiny_ckpt: Path, unseen: Path, unseen_too: Path, tmp_path_factory):
    """The tiny checkpoint exported with INT8 and the wait chosen on ``unseen`` (--tune) and
    every file measured on ``unseen_too`` (--held-out): one export for both options' tests (an
    INT8 export with its choice of ranges costs about a minute here), built by one worker.
    (the folder, what the command printed)"""
    with built_once(tmp_path_factory, "tuned") as (root, todo):
        out = root / "exp"
        if todo:
            fast = ["--subset-size", "50", "--repeats", "2", "--then", "none"]
            args = [str(tiny_ckpt), "--formats", "onnx,openvino-int8", *fast, "--out", str(out)]
            r = run_export(*args, "--tune", str(unseen), "--held-out", str(unseen_too))
            assert r.returncode == 0, r.stderr
            (root / "stdout.txt").write_text(r.stdout)
    return out, (root / "stdout.txt").read_text()


def _unseen(tmp_path_factory, name: str, seed: int) -> Path:
    """The tiny export's six classes drawn with another seed: videos it never saw."""
    from models.synthdata import write_action_dataset

    with built_once(tmp_path_factory, name) as (root, todo):
        if todo:
            write_action_dataset(root, 2, (72, 96), seed=seed)
    return root


@pytest.fixture(scope="session")
def unseen(tmp_path_factory) -> Path:
    return _unseen(tmp_path_factory, "unseen", 9)


@pytest.fixture(scope="session")
def unseen_too(tmp_path_factory) -> Path:
    """A second such dataset, of a third seed (--held-out beside --tune)."""
    return _unseen(tmp_path_factory, "unseen-too", 10)
