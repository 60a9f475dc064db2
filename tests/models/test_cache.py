from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from edge_hf.sampler import resize_into
from edge_hf.sources import SourceOptions
from edge_hf.sources.file import FileSource
from models.cache import FrameCache
from models.errors import BadData
from tests.conftest import mounted_tmpfs


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


def _clips(tiny_actions: Path, n: int) -> list[Path]:
    return sorted(tiny_actions.glob("*/*.avi"))[:n]


def test_beyond_its_limit_the_least_recently_used_entries_of_other_runs_go(
    tmp_path: Path, tiny_actions: Path
):
    a, b, c = _clips(tiny_actions, 3)
    earlier = FrameCache(tmp_path, (32, 40))  # an earlier run: two entries
    entry = earlier.frames(a).nbytes + 128  # an .npy's header is 128 bytes here
    earlier.frames(b)
    old, recent = sorted(tmp_path.glob("*.npy"), key=lambda p: p.name != f"{earlier.key(a)}.npy")
    os.utime(old, (1, 1))  # a's entry: used long ago; b's: just now
    later = FrameCache(tmp_path, (32, 40), limit_gb=2.5 * entry / 1e9)  # room for two
    later.frames(c)
    assert later.evicted == 1 and not old.exists() and recent.exists()
    assert len(list(tmp_path.glob("*.npy"))) == 2


def test_a_run_never_evicts_what_it_uses_and_says_the_limit_is_too_small(
    tmp_path: Path, tiny_actions: Path, caplog
):
    clips = _clips(tiny_actions, 3)
    run = FrameCache(tmp_path, (32, 40), limit_gb=1e-9)  # smaller than one entry
    frames = [run.frames(c) for c in clips]
    assert run.evicted == 0 and len(list(tmp_path.glob("*.npy"))) == 3
    assert all(f.shape[1:] == (32, 40, 3) for f in frames)
    said = [r.getMessage() for r in caplog.records if "limit" in r.getMessage()]
    assert len(said) == 1 and str(tmp_path) in said[0] and "--cache-limit-gb" in said[0]


def test_the_folder_is_looked_at_once_per_run_not_once_per_entry(
    tmp_path: Path, tiny_actions: Path
):
    """A pretraining set has tens of thousands of clips: a folder scan per new entry made
    caching quadratic (minutes of system time)."""
    run = FrameCache(tmp_path, (32, 40), limit_gb=1.0)
    for clip in _clips(tiny_actions, 6):
        run.frames(clip)
    assert run.decoded == 6 and run.scans == 1


def test_a_full_disk_is_an_error_naming_the_folder_and_leaves_no_partial_entry(
    tmp_path: Path, tiny_actions: Path
):
    with mounted_tmpfs(tmp_path / "cache", size="64k") as mnt:  # a real, tiny file system
        clip = _clips(tiny_actions, 1)[0]
        with pytest.raises(BadData, match=f"frame cache {mnt}: cannot write .*--cache FOLDER"):
            FrameCache(mnt, (64, 64)).frames(clip)
        assert list(mnt.iterdir()) == []
