"""Model soups (models.soup, ``models.train --soup N``): the average of members fine-tuned from
one start on one split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from models.checkpoint import load_checkpoint
from models.config import parse
from models.errors import BadArguments, BadData
from models.soup import average
from tests.models.test_train import train


def test_the_average_is_the_mean_of_floats_and_the_first_members_counters():
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(5)}
    b = {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor(9)}
    mixed = average([a, b])
    torch.testing.assert_close(mixed["w"], torch.tensor([2.0, 4.0]))
    assert mixed["n"].item() == 5 and mixed["n"].dtype == torch.int64


def test_members_of_other_networks_are_refused():
    a = {"w": torch.zeros(2)}
    with pytest.raises(BadData, match="member 2's weights do not fit member 1's network"):
        average([a, {"w": torch.zeros(3)}])
    with pytest.raises(BadData, match="member 2's weights do not fit"):
        average([a, {"v": torch.zeros(2)}])


def test_a_soup_needs_a_start_to_average_from():
    with pytest.raises(BadArguments, match=r"soup: expected 1 without --pretrained .*found 2"):
        parse(["--data", "x", "--soup", "2"])
    with pytest.raises(BadArguments, match="soup: expected a whole number of members >= 1"):
        parse(["--data", "x", "--soup", "0"])
    assert parse(["--data", "x", "--soup", "2", "--pretrained", "w.pt"]).soup == 2


def test_from_scratch_a_recipes_soup_is_one_run(tmp_path: Path):
    """--pretrained '' (the way to start from scratch the recipes name) trains one run instead of
    a recipe's soup; asked for a soup too, it is refused."""
    (tmp_path / "w.pt").write_bytes(b"")
    recipe = tmp_path / "mine.toml"
    recipe.write_text('pretrained = "w.pt"\nsoup = 3\n')
    assert parse(["--recipe", str(recipe), "--data", "x"]).soup == 3
    assert parse(["--recipe", str(recipe), "--data", "x", "--pretrained", ""]).soup == 1
    with pytest.raises(BadArguments, match="do not average: --soup 1"):
        parse(["--recipe", str(recipe), "--data", "x", "--pretrained", "", "--soup", "3"])


def test_a_soup_keeps_the_average_of_members_trained_on_one_split(
    tiny_actions: Path, tmp_path: Path
):
    """Two members from the recipe's start, seeds 0 and 1: their weights differ, the soup's
    best.pt is their average (BatchNorm's statistics too), it loads as any run's checkpoint, and
    metrics.json names them."""
    argv = ["--data", str(tiny_actions), "--soup", "2", "--name", "s"]
    r = train(*argv, tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    run = tmp_path / "runs" / "s"
    members = [torch.load(run / f"member{i}" / "best.pt", weights_only=True) for i in (0, 1)]
    soup = torch.load(run / "best.pt", weights_only=True)
    for key in ("backbone.classifier.weight", "backbone.conv_stem.weight"):
        a, b = (m["model"][key] for m in members)
        assert not torch.equal(a, b)  # seeds 0 and 1 drew other windows
        torch.testing.assert_close(soup["model"][key], (a + b) / 2)
    stats = [k for k in soup["model"] if k.endswith("running_mean")]
    assert len(stats) > 30  # MobileNetV3-small's BatchNorms
    for k in stats:
        torch.testing.assert_close(
            soup["model"][k], (members[0]["model"][k] + members[1]["model"][k]) / 2
        )
    assert soup["spec"] == members[0]["spec"]
    assert len(load_checkpoint(run / "best.pt").spec.classes) == 6
    m = json.loads((run / "metrics.json").read_text())
    parts = [json.loads((run / f"member{i}" / "metrics.json").read_text()) for i in (0, 1)]
    assert parts[0]["videos"] == parts[1]["videos"] == m["videos"]
    assert [p["seed"] for p in m["stopped"]["members"]] == [0, 1]
    assert m["stopped"]["reason"] == "soup of 2 members (the average of their weights)"
    assert m["config"]["soup"] == 2 and m["test"]["confusion"]
    assert "s: val top-1" in r.stdout and "(epoch soup of 2)" in r.stdout
