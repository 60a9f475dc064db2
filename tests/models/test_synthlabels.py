"""Tests for models/synthlabels.py (the labels in use: tests/models/test_synthdata.py)."""

from __future__ import annotations

from edge_hf import synth
from models import synthlabels

SIZE = (48, 64)


def test_walk_direction_follows_the_figure() -> None:
    left, right = (
        synth.make_scene(n, seed=2, size=SIZE, preset="real") for n in ("walk_left", "walk_right")
    )
    assert synthlabels.walk_direction(left, 0, left.length - 1) == "walk_left"
    assert synthlabels.walk_direction(right, 0, right.length - 1) == "walk_right"
    hold = synth.make_scene("hold", seed=2, size=SIZE, preset="real")
    assert synthlabels.walk_direction(hold, 0, hold.length - 1) == "walk"  # standing: no direction


def test_mixed_codec_draws_both_and_a_named_codec_is_kept() -> None:
    assert {synthlabels.clip_codec("mixed", s) for s in range(20)} == {"mjpeg", "h264"}
    assert synthlabels.clip_codec("mjpeg", 3) == "mjpeg"
