"""Trainer tests: skipped where torch is not installed (the device venv); tiny data, 64 px."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the trainer needs the [train] extra (torch, timm)")
pytest.importorskip("timm", reason="the trainer needs the [train] extra (torch, timm)")

from models.synthdata import write_streams  # noqa: E402


@pytest.fixture(scope="session")
def tiny_streams(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("streams")
    write_streams(root, 2, (72, 96), seed=3)
    return root
