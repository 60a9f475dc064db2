"""--action-top: the windows of an alert clip labelled whole that the model scores highest are the
ones drawn as its class (models.mil), on real clips the test writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from edge_hf.spec import Scale
from models import data
from models.augment import AugConfig
from models.cache import FrameCache
from models.dataset import TrainSet, Windows
from models.mil import choose, spread, top_windows
from tests.conftest import moving_square
from tests.models.test_train import train

FALL, OTHER = 0, 1


class Motion(torch.nn.Module):
    """A model whose fall score is how much a window moves: the test knows what it must pick."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, H, W, 3] uint8
        move = (x[:, 1:].float() - x[:, :-1].float()).abs().mean(dim=(1, 2, 3, 4))
        return torch.stack([move / 10, torch.ones_like(move)], dim=1)


def test_top_windows_take_the_best_share_and_their_unscored_neighbours():
    scores = np.array([0.1, 0.9, 0.2, 0.8, 0.0])
    assert top_windows(5, np.arange(5), scores, 0.4).tolist() == [1, 3]
    assert top_windows(5, np.arange(5), scores, 0.01).tolist() == [1]  # at least one
    scored = spread(100, 10)
    assert len(scored) == 10 and scored[0] == 0 and scored[-1] == 99
    best = np.zeros(10)
    best[4] = 1.0  # window 44
    assert top_windows(100, scored, best, 0.1).tolist() == list(range(39, 50))


def test_choose_draws_a_whole_fall_clip_only_where_it_moves(tmp_path: Path):
    """A fall clip labelled whole: still for 10 frames, a square moving for 5, then still. With
    a model that scores motion, the fall is drawn only from the windows that see the move; the
    other class's clip keeps all its windows."""
    moving_square(tmp_path / "fall" / "fall_a.avi", 40)
    moving_square(tmp_path / "other" / "other_a.avi", 40)
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    w = Windows(
        ds.train,
        FrameCache(tmp_path / "cache", (32, 32)),
        (Scale(3, 1),),
        "video",
        frozenset({FALL}),
    )
    ts = TrainSet(w, 64, AugConfig(mode="none"), None, seed=0)
    fall, other = w.video.index(FALL), w.video.index(OTHER)
    assert w.whole[fall] and not w.whole[other]
    chosen = choose(Motion(), ts, 0.15, torch.device("cpu"), batch=8)
    assert chosen is not None and chosen["clips"] == 1 and chosen["windows"] == 38
    picked = ts.where[FALL][0][1]
    assert len(picked) == chosen["kept"] == 6
    assert w.starts[fall][picked].tolist() == list(range(9, 15))  # the windows that see the move
    assert len(ts.where[OTHER][0][1]) == 38
    falls = [ts.draw(i)[:2] for i in range(0, len(ts), 2)]  # even samples draw the fall
    assert {int(w.starts[c][j]) for c, j in falls} == set(range(9, 15))
    ts.choose({})
    assert len(ts.where[FALL][0][1]) == 38  # a new choice starts from every window


def test_training_chooses_from_the_third_epoch_on(tiny_actions: Path, tmp_path: Path):
    """The trainer end to end with a DataLoader worker (started afresh each epoch, so it sees
    the choice): epochs 3 and 4 train on the chosen windows, and metrics.json counts them. With
    --backwards beside it, the chosen windows are also drawn backwards (models.backwards)."""
    r = train(
        "--data",
        str(tiny_actions),
        "--name",
        "top",
        "--epochs",
        "4",
        "--workers",
        "1",
        "--action-top",
        "0.5",
        "--backwards",
        tmp=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "drawn backwards, taught as not their class (--backwards): fall" in r.stderr
    said = [line for line in r.stderr.splitlines() if "action windows chosen" in line]
    assert [line.split(":")[0][-7:] for line in said] == ["epoch 3", "epoch 4"]
    m = json.loads((tmp_path / "runs" / "top" / "metrics.json").read_text())
    kept = [row.get("action_windows") for row in m["history"]]
    assert kept[:2] == [None, None] and all(k > 0 for k in kept[2:])
    r = train("--data", str(tiny_actions), "--action-top", "1", tmp=tmp_path)
    assert (
        r.returncode == 2
        and "action_top: expected a fraction in [0, 1) (0: off), found 1.0" in r.stderr
    )
