"""Data parallel training (models/distributed.py): a real ``torchrun`` of two CPU processes
(gloo) on the tiny actions against one process with the same global batch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from models.distributed import EpochSampler
from tests.conftest import ROOT, run_module
from tests.models.test_train import TINY

# Two epochs of 36 draws (9 clips x 4): 2 steps of 16 on one process, 2 steps of 8 a rank on two.
RUN = [*TINY, "--epochs", "2", "--samples-per-clip", "4"]
FILES = {"best.pt", "last.pt", "metrics.json", "curves.png", "confusion.png"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``torchrun`` of 2 CPU ranks of ``models.train ARGS`` on a free port of 127.0.0.1, each rank
    listing what it wrote under ``tmp/runs`` in ``tmp/written-rank{0,1}.txt``."""
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc-per-node",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        "-m",
        "tests.models.audited_train",
        *args,
    ]
    # two ranks on a 2-core box: one thread each
    env = {"PYTHONPATH": str(ROOT), "AUDIT_ROOT": str(tmp / "runs"), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, **env}
    )


@pytest.fixture(scope="module")
def runs(tiny_actions: Path, tmp_path_factory) -> Path:
    """``runs/one``: one process, batch 16; ``runs/two``: torchrun, 2 ranks of batch 8 (what
    they printed in ``two.out``)."""
    tmp = tmp_path_factory.mktemp("ddp")
    where = ["--data", str(tiny_actions), "--out", str(tmp / "runs"), "--cache", str(tmp / "cache")]
    r = run_module("models.train", *RUN, *where, "--batch", "16", "--name", "one", timeout=300)
    assert r.returncode == 0, r.stderr
    r = torchrun(tmp, *RUN, *where, "--batch", "8", "--name", "two")
    assert r.returncode == 0, r.stderr
    (tmp / "two.out").write_text(r.stdout)
    return tmp


def test_two_ranks_write_what_one_process_writes_and_only_rank_0_writes(runs: Path):
    one, two = runs / "runs" / "one", runs / "runs" / "two"
    assert {p.name for p in one.iterdir()} == {p.name for p in two.iterdir()} == FILES
    rank0 = (runs / "written-rank0.txt").read_text()
    assert f"open {two / 'metrics.json'}" in rank0 and f"os.rename {two / 'best.pt.tmp'}" in rank0
    assert (runs / "written-rank1.txt").read_text() == ""
    # one result line, rank 0's
    assert [ln.split(":")[0] for ln in (runs / "two.out").read_text().splitlines()] == ["two"]
    specs = [torch.load(d / "best.pt", weights_only=True)["spec"] for d in (one, two)]
    assert specs[0] == specs[1]


def test_two_ranks_train_like_one_process(runs: Path):
    """The same epochs, stop and splits. The ranks together draw the same 16 samples a step as
    the one process (tests below), from the same weights, so the first epoch's losses differ only
    by BatchNorm's batch statistics (8 samples a rank, 16 in one process) and dropout: 15% of
    the loss, where a run that trained on half the data or diverged differs far more. Later
    epochs compound those differences over a 4-step run; their validation loss must stay
    within 25%."""
    one, two = (
        json.loads((runs / "runs" / n / "metrics.json").read_text()) for n in ("one", "two")
    )
    assert one["stopped"]["epochs_run"] == two["stopped"]["epochs_run"] == 2
    assert one["stopped"]["reason"] == two["stopped"]["reason"]
    assert one["videos"] == two["videos"] and one["classes"] == two["classes"]
    assert two["config"]["batch"] == 8 and one["config"]["batch"] == 16
    first = one["history"][0], two["history"][0]
    assert first[1]["loss"] == pytest.approx(first[0]["loss"], rel=0.15)
    assert first[1]["val_loss"] == pytest.approx(first[0]["val_loss"], rel=0.15)
    for a, b in zip(one["history"], two["history"], strict=True):
        assert a["epoch"] == b["epoch"] and b["val_loss"] == pytest.approx(a["val_loss"], rel=0.25)
    assert sum(map(sum, two["test"]["confusion"])) == sum(map(sum, one["test"]["confusion"]))


def test_a_soup_trains_each_member_on_both_ranks(tiny_actions: Path, tmp_path: Path):
    where = ["--data", str(tiny_actions), "--out", str(tmp_path / "runs")]
    where += ["--cache", str(tmp_path / "cache")]
    r = torchrun(tmp_path, *TINY, "--soup", "2", *where, "--name", "soup")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "runs" / "soup" / "metrics.json").read_text())
    assert [x["name"] for x in m["stopped"]["members"]] == ["soup/member0", "soup/member1"]
    assert (tmp_path / "runs" / "soup" / "member1" / "best.pt").is_file()
    assert "soup/member1" in (tmp_path / "written-rank0.txt").read_text()
    assert (tmp_path / "written-rank1.txt").read_text() == ""


@pytest.mark.parametrize(("n", "ranks"), [(36, 2), (37, 2), (10, 3), (5, 1)])
def test_the_ranks_share_each_epoch_draw_and_one_process_draws_them_all(n: int, ranks: int):
    """Rank r's batch b holds the samples one process's batch b of ``ranks`` times the size holds
    (every ranks-th from r); all indices are drawn, the last few twice when n does not divide."""
    shares = [list(EpochSampler(n, 0, r, ranks)) for r in range(ranks)]
    assert len({len(s) for s in shares}) == 1
    one = list(EpochSampler(n, 0))
    assert sorted(one) == list(range(n))
    together = [i for step in zip(*shares, strict=True) for i in step]
    assert together[:n] == one and len(together) - n < ranks


def test_an_epoch_draws_in_an_order_of_its_own_and_again_the_same():
    s = EpochSampler(50, 7)
    s.set_epoch(3)
    third = list(s)
    s.set_epoch(4)
    assert list(s) != third
    again = EpochSampler(50, 7)
    again.set_epoch(3)
    assert list(again) == third
