from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.augment import AugConfig, Draw, apply, augment, fit


def same_frames(t: int = 3) -> np.ndarray:
    rng = np.random.default_rng(1)
    frame = rng.integers(0, 256, (48, 64, 3), np.uint8)
    return np.repeat(frame[None], t, axis=0)


def test_synced_augmentation_gives_every_frame_the_same_crop_flip_and_colour():
    for seed in range(20):
        out, _ = augment(same_frames(4), 0, np.random.default_rng(seed), AugConfig("sync"), {})
        assert all(np.array_equal(out[0], f) for f in out[1:])
        assert not np.array_equal(out[0], same_frames(1)[0])  # it did augment


def test_per_frame_augmentation_breaks_the_frames_apart():
    out, _ = augment(same_frames(4), 0, np.random.default_rng(0), AugConfig("per-frame"), {})
    assert not all(np.array_equal(out[0], f) for f in out[1:])


@pytest.mark.parametrize(
    ("flip_map", "label", "expect"),
    [
        ({0: 1, 1: 0}, 0, 1),  # walk_left flipped is walk_right
        ({0: 1, 1: 0}, 2, 2),  # classes outside the map keep their label
        ({}, 0, 0),
    ],
)
def test_flip_label_map(flip_map, label, expect):
    _, got = augment(
        same_frames(), label, np.random.default_rng(0), AugConfig("sync", flip=1.0), flip_map
    )
    assert got == expect


def test_no_flip_map_forbids_flips():
    frames = same_frames()
    h, w = frames.shape[1:3]
    cfg = AugConfig(
        "sync", flip=1.0, scale=(1.0, 1.0), ratio=(w / h, w / h), brightness=0, gain=(1, 1)
    )
    kept, label = augment(frames, 0, np.random.default_rng(0), cfg, None)
    assert label == 0 and np.array_equal(kept, frames)
    flipped, label = augment(frames, 0, np.random.default_rng(0), cfg, {0: 1})
    assert label == 1 and np.array_equal(flipped, frames[:, :, ::-1])


@given(
    alpha=st.floats(0.8, 1.2),
    beta=st.floats(-51.0, 51.0),
    pixels=st.lists(st.integers(0, 255), min_size=2, max_size=64),
)
def test_brightness_and_contrast_clip_like_a_camera_and_never_fold_dark_pixels(alpha, beta, pixels):
    """The colour draw is alpha x + beta saturated at 0 and 255: it keeps the pixels' order. A
    dark figure (5) on a dark floor (35) darkened by 20 stays darker than the floor (0 < 15);
    |alpha x + beta| made it 15 on 15, erased."""
    x = np.array(pixels, np.uint8).reshape(1, -1, 1).repeat(3, axis=2)
    out = np.empty_like(x)
    apply(x, Draw((0, 0, 1, x.shape[1]), False, alpha, beta), out)
    want = np.clip(np.rint(alpha * x.astype(np.float64) + beta), 0, 255)
    assert np.abs(out - want).max() <= 1  # rounding of a half
    order = np.argsort(x[0, :, 0], kind="stable")
    assert (np.diff(out[0, order, 0].astype(int)) >= 0).all()


@given(
    alpha=st.floats(0.8, 1.2),
    beta=st.floats(-51.0, 51.0),
    figure=st.integers(0, 255),
    floor=st.integers(0, 255),
    spread=st.integers(0, 40),
)
def test_no_draw_erases_a_figure_that_differs_from_its_floor(alpha, beta, figure, floor, spread):
    """A dark figure (5) on a dark floor (35) darkened by 35 became 0 on 0 when both clipped;
    the shift is now bounded by the frames' own range (a scene of floor +- spread)."""
    scene = np.array([figure, floor, max(floor - spread, 0), min(floor + spread, 255)], np.uint8)
    x = scene.reshape(1, -1, 1).repeat(3, axis=2)
    d = fit(Draw((0, 0, 1, x.shape[1]), False, alpha, beta), int(x.min()), int(x.max()))
    out = np.empty_like(x)
    apply(x, d, out)
    kept = abs(int(out[0, 0, 0]) - int(out[0, 1, 0]))
    gap = abs(figure - floor)
    if alpha * (int(x.max()) - int(x.min())) <= 255:  # the range fits: nothing clips
        assert kept >= round(min(alpha, 1.0) * gap) - 1
