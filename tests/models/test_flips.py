"""models/flips.py: a horizontal flip never silently keeps a directional label."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest

from models.augment import AugConfig, augment
from models.data import Dataset
from models.errors import BadData
from models.flips import auto, mirror_name, plan


@pytest.mark.parametrize(
    ("name", "mirror"),
    [
        ("walk_left", "walk_right"),
        ("turn-right", "turn-left"),
        ("LeftWave", "RightWave"),
        ("swipeLeft", "swipeRight"),
        ("LEFT_TURN", "RIGHT_TURN"),
        ("left", "right"),
        ("left_to_right", "right_to_left"),
        ("bright_light", None),  # "right" inside a word is no direction
        ("leftover", None),
        ("Copyright", None),
        ("fall", None),
    ],
)
def test_mirror_name(name, mirror):
    assert mirror_name(name) == mirror


def _ds(classes, flip=None, declared=False) -> Dataset:
    return Dataset(Path("/data"), tuple(classes), (), (), (), flip, declared)


def test_auto_pairs_left_right_classes_and_never_flips_an_orphan():
    p = plan("auto", _ds(["LeftWave", "RightWave", "turn_left", "fall", "walk_left", "walk_right"]))
    assert p.allowed and p.swap == {
        "LeftWave": "RightWave",
        "RightWave": "LeftWave",
        "walk_left": "walk_right",
        "walk_right": "walk_left",
    }
    assert p.never == ("turn_left",)
    assert "LeftWave<->RightWave" in p.describe() and "never flipped: turn_left" in p.describe()
    classes = ("LeftWave", "RightWave", "turn_left", "fall", "walk_left", "walk_right")
    assert p.indices(classes) == {0: 1, 1: 0, 2: -1, 4: 5, 5: 4}


def test_a_dataset_with_no_directional_classes_flips_freely():
    p = auto(("fall", "lie_down", "wave", "bright"))
    assert p.allowed and p.swap == {} and p.never == ()
    assert p.indices(("fall", "lie_down", "wave", "bright")) == {}


def test_declared_flip_json_wins_in_auto_mode_and_none_forbids():
    p = plan("auto", _ds(["walk_left", "walk_right"], None, declared=True))
    assert not p.allowed and p.indices(("walk_left", "walk_right")) is None
    assert plan("none", _ds(["walk_left", "walk_right"])).indices(("a", "b")) is None


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        ({"walk_left": "walk_right", "walk_right": "walk_left"}, nullcontext()),
        ({}, nullcontext()),  # every label kept... except directional ones (never flipped)
        (
            {"walk_left": "walk_right"},
            pytest.raises(BadData, match="'walk_right' does not flip back to 'walk_left'"),
        ),
        (["walk_left"], pytest.raises(BadData, match="expected a label map")),
    ],
)
def test_flip_file(tmp_path: Path, content, expect):
    f = tmp_path / "flip.json"
    f.write_text(json.dumps(content))
    with expect:
        p = plan(str(f), _ds(["walk_left", "walk_right", "fall"]))
        assert p.swap == content or (content == {} and p.never == ("walk_left", "walk_right"))


def test_unknown_flip_mode_is_an_error():
    with pytest.raises(
        BadData, match="--flip: expected auto, none or a JSON file, found 'sideways'"
    ):
        plan("sideways", _ds(["fall"]))


def test_a_never_flipped_class_is_not_flipped_and_others_are():
    frames = np.arange(2 * 4 * 6 * 3, dtype=np.uint8).reshape(2, 4, 6, 3)
    cfg = AugConfig("sync", flip=1.0, scale=(1, 1), ratio=(1.5, 1.5), brightness=0, gain=(1, 1))
    kept, label = augment(frames, 0, np.random.default_rng(0), cfg, {0: -1, 1: 2, 2: 1})
    assert label == 0 and np.array_equal(kept, frames)
    flipped, label = augment(frames, 1, np.random.default_rng(0), cfg, {0: -1, 1: 2, 2: 1})
    assert label == 2 and np.array_equal(flipped, frames[:, :, ::-1])
