"""Windows, training draws and evaluation windows of annotated clips (real video files)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import cv2
import numpy as np

import models.dataset
from edge_hf.sampler import StrideSampler
from edge_hf.spec import HyperframeSpec, Scale
from models import data
from models.augment import AugConfig
from models.cache import FrameCache
from models.dataset import EvalSet, TrainSet, Windows, split_inputs
from tests.conftest import moving_square

FALL, OTHER = 0, 1


def _clip(path: Path, frames: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25, (32, 32))
    for i in range(frames):
        w.write(np.full((32, 32, 3), 8 * i % 256, np.uint8))
    w.release()


def _windows(tmp_path: Path) -> Windows:
    """One 40-frame fall clip: frames 0-9 walking (not annotated), 10-14 the fall, 15-39 lying
    (other); and one 20-frame clip of other."""
    _clip(tmp_path / "fall" / "v_fall_g01_c01.avi", 40)
    _clip(tmp_path / "other" / "v_other_g01_c01.avi", 20)
    (tmp_path / "annotations.csv").write_text(
        "video,start_frame,end_frame,label\n"
        "fall/v_fall_g01_c01.avi,10,14,fall\nfall/v_fall_g01_c01.avi,15,39,other\n"
    )
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    cache = FrameCache(tmp_path / "cache", (16, 16))
    return Windows(ds.train, cache, (Scale(3, 1),), "video", frozenset({FALL}))


def test_training_draws_give_each_label_an_equal_share(tmp_path: Path):
    w = _windows(tmp_path)
    fall_clip = w.video.index(FALL)
    assert Counter(w.labels[fall_clip].tolist()) == {FALL: 5, OTHER: 24}  # walking left out
    ts = TrainSet(w, 200, AugConfig(mode="none"), None, seed=0)
    assert len(ts) == 400
    drawn = Counter(ts[i][1] for i in range(len(ts)))
    assert drawn == {FALL: 200, OTHER: 200}  # 5 fall windows of 45, in one clip of two
    w.draws[1 - fall_clip] = 3  # --more-data DIR:3 for the other clip
    assert len(TrainSet(w, 200, AugConfig(mode="none"), None, seed=0)) == 203


def test_per_video_evaluation_uses_the_windows_of_the_clips_own_action(tmp_path: Path):
    w = _windows(tmp_path)
    es = EvalSet(w, 8)
    fall_clip = w.video.index(FALL)
    mine = [(s, lab) for c, s, lab in es.items if c == fall_clip]
    assert mine and {lab for _, lab in mine} == {FALL}
    assert all(9 <= s <= 13 for s, _ in mine)  # windows whose frames are mostly the fall
    other = [lab for c, _, lab in es.items if c != fall_clip]
    assert len(other) == 8 and set(other) == {OTHER}


def test_training_windows_are_the_runtimes_gather_for_a_two_scale_spec(tmp_path: Path):
    """Offsets come from spec.inputs in the trainer as in the runtime: every training window of
    a 2-scale pyramid is, frame for frame, what the runtime's sampler gathers at its anchor."""
    spec = HyperframeSpec(
        frames=3,
        stride=1,
        size=(16, 16),
        classes=("fall", "other"),
        scales=(Scale(3, 1, 0), Scale(3, 4, 1)),
    )
    _clip(tmp_path / "fall" / "v_fall_g01_c01.avi", 30)
    _clip(tmp_path / "other" / "v_other_g01_c01.avi", 20)
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    w = Windows(
        ds.train, FrameCache(tmp_path / "cache", spec.size), spec.inputs, "video", frozenset()
    )
    assert w.span == spec.window == 10
    sampler = StrideSampler(spec, every=1)
    outs = sampler.input_buffers()
    checked = 0
    for c in range(len(w)):
        clip = w.clip(c)
        assert w.starts[c].tolist() == list(range(len(clip) - spec.window + 1))
        for i, frame in enumerate(clip):
            sampler.slot(i)[...] = frame
            if i >= spec.window - 1:
                sampler.gather(i, outs)
                window = w.window(c, i - (spec.window - 1))
                assert np.array_equal(np.concatenate([o[0] for o in outs]), window)
                assert [b.shape[1] for b in split_inputs(window[None], spec.inputs)] == [3, 3]
                checked += 1
    assert checked == (30 - 9) + (20 - 9)


def test_a_window_is_labelled_by_the_frames_it_sees(tmp_path: Path):
    """The slow scale reaches back 8 frames: a window is labelled by every frame it sees, so a
    pyramid window whose old frames are still the (unannotated) walk is skipped under `video`."""
    _clip(tmp_path / "fall" / "v_fall_g01_c01.avi", 40)
    (tmp_path / "annotations.csv").write_text(
        "video,start_frame,end_frame,label\nfall/v_fall_g01_c01.avi,10,39,fall\n"
    )
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    cache = FrameCache(tmp_path / "cache", (16, 16))
    one = Windows(ds.train, cache, (Scale(3, 1),), "video", frozenset())
    two = Windows(ds.train, cache, (Scale(3, 1), Scale(3, 4)), "video", frozenset())
    # newest frame 11: fast 9,10,11 is 2 of 3 fall (labelled); pyramid 3,7,9,10,11 is 2 of 5
    # (skipped); newest frame 12: pyramid 4,8,10,11,12 is 3 of 5 (labelled)
    assert one.starts[0][0] + 2 == 11
    assert two.starts[0][0] + 8 == 12
    assert two.offsets.tolist() == [6, 7, 8, 0, 4, 8]


def test_only_a_bounded_number_of_clips_is_mapped_at_once(tmp_path: Path, monkeypatch):
    """Each mapped clip holds a file descriptor: 20 000 clips ran out of them (EMFILE)."""
    for k in range(5):
        _clip(tmp_path / "other" / f"v_other_g{k:02d}_c01.avi", 12)
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    cache = FrameCache(tmp_path / "cache", (16, 16))
    monkeypatch.setattr(models.dataset, "OPEN_CLIPS", 2)
    fds = len(os.listdir("/proc/self/fd"))
    w = Windows(ds.train, cache, (Scale(3, 1),), "video", frozenset())
    for _ in range(2):
        for c in range(len(w)):
            want = cache.frames(ds.train[c].path)[w.starts[c][-1] + w.offsets]
            assert np.array_equal(w.window(c, int(w.starts[c][-1])), want)
    assert len(w) == 5 and len(os.listdir("/proc/self/fd")) <= fds + 2
    Path(w.files[0]).unlink()  # another run sharing the cache evicted it: decoded again
    assert np.array_equal(w.window(0, 0), cache.frames(ds.train[0].path)[w.offsets])


def test_alert_clips_labelled_whole_keep_the_windows_that_move(tmp_path: Path):
    """--action-motion: a fall clip with no annotations, still for 10 frames, a square moving
    for 5, then still (the lying): only the windows that see the move are trained on and
    scored; a clip of another class, and the same clip with the option off, keep them all."""

    moving_square(tmp_path / "fall" / "fall_a.avi", 40)
    moving_square(tmp_path / "other" / "other_a.avi", 40)
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    cache = FrameCache(tmp_path / "cache", (32, 32))
    for motion, kept in ((0.0, list(range(38))), (0.15, list(range(9, 15)))):
        w = Windows(ds.train, cache, (Scale(3, 1),), "video", frozenset({FALL}), motion)
        assert w.starts[w.video.index(FALL)].tolist() == kept
        assert w.starts[w.video.index(OTHER)].tolist() == list(range(38))
