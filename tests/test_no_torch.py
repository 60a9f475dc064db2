"""The device never imports torch: every edge_hf module is imported in a fresh interpreter in
which importing torch (or timm, torchvision, nncf) raises, whether or not they are installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = r"""
import importlib, pkgutil, sys
import edge_hf
names = [m.name for m in pkgutil.walk_packages(edge_hf.__path__, "edge_hf.")]
for name in names:
    importlib.import_module(name)
heavy = sorted(n for n in ("torch", "timm", "torchvision", "nncf") if n in sys.modules)
print(len(names), heavy)
"""


def test_every_edge_hf_module_imports_without_torch(tmp_path: Path):
    for pkg in ("torch", "timm", "torchvision", "nncf"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(
            f"raise ImportError('the device side imported {pkg}')\n"
        )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    count, heavy = r.stdout.split(" ", 1)
    assert int(count) >= 20 and heavy.strip() == "[]"


def test_the_sentinel_works(tmp_path: Path):
    """If the sentinel did not fire, the test above could not fail."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('sentinel')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode != 0 and "sentinel" in r.stderr
