"""Windows, training draws and evaluation windows of annotated clips (real video files)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import cv2
import numpy as np

from models import data
from models.augment import AugConfig
from models.cache import FrameCache
from models.dataset import EvalSet, TrainSet, Windows

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
    return Windows(ds.train, cache, 3, 1, "video", frozenset({FALL}))


def test_training_draws_give_each_label_an_equal_share(tmp_path: Path):
    w = _windows(tmp_path)
    fall_clip = w.video.index(FALL)
    assert Counter(w.labels[fall_clip].tolist()) == {FALL: 5, OTHER: 24}  # walking left out
    ts = TrainSet(w, 200, AugConfig(mode="none"), None, seed=0)
    assert len(ts) == 400
    drawn = Counter(ts[i][1] for i in range(len(ts)))
    assert drawn == {FALL: 200, OTHER: 200}  # 5 fall windows of 45, in one clip of two


def test_per_video_evaluation_uses_the_windows_of_the_clips_own_action(tmp_path: Path):
    w = _windows(tmp_path)
    es = EvalSet(w, 8)
    fall_clip = w.video.index(FALL)
    mine = [(s, lab) for c, s, lab in es.items if c == fall_clip]
    assert mine and {lab for _, lab in mine} == {FALL}
    assert all(9 <= s <= 13 for s, _ in mine)  # windows whose frames are mostly the fall
    other = [lab for c, _, lab in es.items if c != fall_clip]
    assert len(other) == 8 and set(other) == {OTHER}
