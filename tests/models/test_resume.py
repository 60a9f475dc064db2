"""``--resume`` after a SIGKILL in the middle of an epoch (models.train): the run goes on from
its last completed epoch and ends as an uninterrupted run does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.conftest import ROOT
from tests.models.test_train import TINY, train

# 72 draws an epoch (9 clips x 8): long enough an epoch to be killed in it
LONGER = ["--epochs", "3", "--samples-per-clip", "8"]


def saved_epoch(last: Path) -> int:
    """The epoch last.pt holds (0: none yet). It is replaced whole (written aside, renamed),
    so it can be read while the run goes on."""
    return torch.load(last, weights_only=True)["epoch"] if last.is_file() else 0


def killed_in_an_epoch(args: list[str], last: Path) -> int:
    """Start the trainer, SIGKILL it as soon as last.pt holds epoch 1 (it is then in the next
    epoch), and return the epoch its last.pt holds after the kill."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "models.train", *TINY, *LONGER, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while saved_epoch(last) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL, "the run ended before it could be killed"
    finally:
        proc.kill()
        proc.wait(30)
    return saved_epoch(last)


@pytest.fixture(scope="module")
def both(tiny_actions: Path, tmp_path_factory) -> tuple[dict, dict, Path]:
    tmp = tmp_path_factory.mktemp("resume")
    data = ["--data", str(tiny_actions)]
    r = train(*LONGER, *data, "--name", "whole", tmp=tmp)
    assert r.returncode == 0, r.stderr
    cut = tmp / "runs" / "cut"
    where = ["--out", str(tmp / "runs"), "--cache", str(tmp / "cache")]
    at = killed_in_an_epoch([*data, *where, "--name", "cut"], cut / "last.pt")
    assert 1 <= at < 3 and not (cut / "metrics.json").exists()  # stopped in epoch 2 or 3
    r = train(*LONGER, *data, "--name", "cut", "--resume", tmp=tmp)
    assert r.returncode == 0, r.stderr
    assert f"resumed after epoch {at}" in r.stderr
    whole, cut_m = (
        json.loads((tmp / "runs" / n / "metrics.json").read_text()) for n in ("whole", "cut")
    )
    return whole, cut_m, tmp


def test_a_run_killed_in_an_epoch_resumes_and_ends_as_an_uninterrupted_one(both):
    """The same epochs, the same kept epoch, and the same scores: the resumed run restores the
    weights, optimizer, schedule, random stream and each epoch's draws (seeded by the epoch),
    so on one machine it computes what the uninterrupted run computed; 1e-4 leaves room for
    the last digits of a multi-threaded CPU reduction."""
    whole, cut, _ = both
    assert cut["stopped"] == whole["stopped"]
    assert [r["epoch"] for r in cut["history"]] == [1, 2, 3]
    for a, b in zip(whole["history"], cut["history"], strict=True):
        for key in ("loss", "train_acc", "val_loss", "top1", "alert_auc"):
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-4), (a["epoch"], key)
    assert cut["test_top1"] == pytest.approx(whole["test_top1"], abs=1e-4)
    assert cut["test"]["confusion"] == whole["test"]["confusion"]


def test_best_pt_is_the_kept_epoch_and_the_time_spent_is_carried(both):
    _, cut, tmp = both
    run = tmp / "runs" / "cut"
    best = torch.load(run / "best.pt", weights_only=True)
    last = torch.load(run / "last.pt", weights_only=True)
    assert best["epoch"] == cut["stopped"]["best_epoch"] and last["epoch"] == 3
    assert last["elapsed"] > 0 and "rng" in last and not list(run.glob("*.tmp"))


def test_resuming_a_run_that_used_its_time_trains_no_more(both, tiny_actions: Path):
    """--time-limit counts the minutes of every invocation: a finished run resumed with more
    epochs and a limit it has already used stops at once, before training an epoch."""
    _, _, tmp = both
    again = ["--data", str(tiny_actions), "--name", "cut", "--resume", *LONGER, "--epochs", "5"]
    r = train(*again, "--time-limit", "0.001", tmp=tmp)
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp / "runs" / "cut" / "metrics.json").read_text())
    assert m["stopped"]["epochs_run"] == 3 and m["stopped"]["reason"].startswith("time limit")
