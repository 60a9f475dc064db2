from __future__ import annotations

import numpy as np
import pytest

from models.augment import AugConfig, augment


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
        "sync", flip=1.0, scale=(1.0, 1.0), ratio=(w / h, w / h), brightness=0, contrast=0
    )
    kept, label = augment(frames, 0, np.random.default_rng(0), cfg, None)
    assert label == 0 and np.array_equal(kept, frames)
    flipped, label = augment(frames, 0, np.random.default_rng(0), cfg, {0: 1})
    assert label == 1 and np.array_equal(flipped, frames[:, :, ::-1])
