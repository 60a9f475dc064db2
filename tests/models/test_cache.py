from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_hf.sampler import resize_into
from edge_hf.sources import SourceOptions
from edge_hf.sources.file import FileSource
from models.cache import FrameCache


def test_decoded_once_and_identical_to_the_runtime_preprocessing(
    tmp_path: Path, tiny_actions: Path
):
    clip = next((tiny_actions / "fall").glob("*.avi"))
    first = FrameCache(tmp_path, (32, 40))
    frames = first.frames(clip)
    assert first.decoded == 1 and frames.shape[1:] == (32, 40, 3)
    again = FrameCache(tmp_path, (32, 40))  # a later run
    assert np.array_equal(again.frames(clip), frames) and again.decoded == 0
    # exactly what the runtime would feed the model for frame 5
    src = FileSource(str(clip), "c", SourceOptions(fast=True))
    src.open()
    for _ in range(6):
        src.grab()
    ring = np.empty((32, 40, 3), np.uint8)
    resize_into(src.retrieve(), ring)
    assert np.array_equal(ring, frames[5])


def test_another_size_is_another_entry_and_junk_is_none(tmp_path: Path, tiny_actions: Path):
    clip = next((tiny_actions / "wave").glob("*.avi"))
    assert FrameCache(tmp_path, (16, 16)).frames(clip).shape[1:3] == (16, 16)
    assert len(list(tmp_path.glob("*.npy"))) == 1
    junk = tmp_path / "junk.avi"
    junk.write_bytes(b"not a video")
    assert FrameCache(tmp_path, (16, 16)).frames(junk) is None
