"""models.config: recipes, flags and their checks, parsed without training."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edge_hf.spec import Scale
from models.config import parse, pyramid_scales
from models.errors import BadArguments
from tests.conftest import run_module


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--recipe", "realtime"],
            "recipe 'realtime' not found; expected one of ['accuracy-first'",
        ),
        (["--recipe", "realtime-cpu"], "--data is required"),
        (["--data", "x", "--aug", "shuffle"], "aug: expected sync / per-frame / none"),
    ],
)
def test_bad_config(argv, message):
    with pytest.raises(BadArguments, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse(argv)


def test_recipe_typo_suggests_the_key(tmp_path: Path):
    recipe = tmp_path / "mine.toml"
    recipe.write_text('arch = "resnet18"\nlrr = 0.1\n')
    with pytest.raises(BadArguments, match=r"mine.toml: unknown key 'lrr'; did you mean 'lr'\?"):
        parse(["--recipe", str(recipe), "--data", "x"])


def test_every_recipe_parses():
    for name in ("realtime-cpu", "fast-action", "slow-behaviour", "accuracy-first"):
        cfg = parse(["--recipe", name, "--data", "x"])
        assert cfg.recipe == name
    assert (
        parse(["--recipe", "realtime-cpu", "--data", "x", "--frames", "5"]).frames == 5
    )  # flags win


def test_a_recipe_starts_from_weights_beside_it_unless_told_otherwise(tmp_path: Path):
    """realtime-cpu starts from the shipped fall model, found from any working folder;
    --pretrained '' starts from scratch; a recipe's relative path is relative to the recipe."""
    cfg = parse(["--recipe", "realtime-cpu", "--data", "x"])
    assert Path(cfg.pretrained).is_file() and cfg.pretrained.endswith("weights/falls-t3.pt")
    assert cfg.soup == 3  # three members from it, averaged (models/soup.py)
    scratch = parse(["--recipe", "realtime-cpu", "--data", "x", "--pretrained", ""])
    assert scratch.pretrained == "" and scratch.soup == 1
    (tmp_path / "w.pt").write_bytes(b"")
    (tmp_path / "mine.toml").write_text('pretrained = "w.pt"\n')
    mine = parse(["--recipe", str(tmp_path / "mine.toml"), "--data", "x"])
    assert mine.pretrained == str(tmp_path / "w.pt")


def test_every_flag_has_a_help_text():
    r = run_module("models.train", "--help")
    assert r.returncode == 0
    flags = re.findall(r"^  (--[a-z-]+)(.*)$", r.stdout, re.M)
    assert len(flags) >= 30
    bare = [
        f for f, rest in flags if not rest.strip() and f"{f} " not in r.stdout.replace("\n", " ")
    ]
    assert not bare, f"flags without help: {bare}"


def test_a_scale_that_disagrees_with_frames_is_refused_naming_both():
    with pytest.raises(BadArguments, match=r"scales\[1\].frames: expected 3 .*found 5"):
        parse(["--data", "d", "--frames", "3", "--scales", "3x1", "5x2"])
    with pytest.raises(BadArguments, match="expected TxS or TxS\\+O"):
        parse(["--data", "d", "--scales", "3by1"])
    cfg = parse(["--data", "d", "--recipe", "realtime-cpu", "--scales", "3x1", "3x4+2"])
    assert pyramid_scales(cfg) == (Scale(3, 1), Scale(3, 4, 2))
