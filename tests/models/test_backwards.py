"""--backwards: an alert class's windows played in reverse, taught as "not that class"
(models.backwards), drawn from real clips the test writes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import torch

from edge_hf.spec import Scale
from models import backwards, data
from models.augment import AugConfig
from models.cache import FrameCache
from models.dataset import TrainSet, Windows
from tests.models.test_dataset import FALL, OTHER, _clip, _windows


def test_a_backwards_share_per_alert_class_of_its_windows_reversed(tmp_path: Path):
    """The fall clip brightens frame by frame: its windows drawn backwards darken, are labelled
    -1 - fall, and are the fall windows reversed; forward draws are untouched."""
    w = _windows(tmp_path)
    ts = TrainSet(w, 200, AugConfig(mode="none"), None, seed=0, backwards=frozenset({FALL}))
    assert len(ts) == 400
    drawn = Counter()
    for i in range(60):
        x, label = ts[i]
        c, j, _ = ts.draw(i)
        start = int(w.starts[c][j])
        drawn[label] += 1
        if label == -1 - FALL:
            assert ts.share(i) == (FALL, True) and w.labels[c][j] == FALL
            assert np.array_equal(x, w.window(c, start)[::-1])
            assert x[0].mean() > x[-1].mean()
        else:
            assert np.array_equal(x, w.window(c, start))
    assert drawn == {FALL: 20, OTHER: 20, -1 - FALL: 20}
    assert TrainSet(w, 200, AugConfig(mode="none"), None, seed=0).backwards == []


def test_a_backwards_window_is_what_the_sampler_gathers_from_the_video_reversed(tmp_path: Path):
    """For a two-scale pyramid too: played backwards, a window is the window the runtime would
    gather at the mirrored anchor of the clip reversed. One frame (T=1) has no backwards."""
    _clip(tmp_path / "fall" / "v_fall_g01_c01.avi", 30)
    _clip(tmp_path / "other" / "v_other_g01_c01.avi", 20)
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    cache = FrameCache(tmp_path / "cache", (16, 16))
    w = Windows(ds.train, cache, (Scale(3, 1, 0), Scale(3, 4, 1)), "video", frozenset({FALL}))
    c = w.video.index(FALL)
    arr = w.clip(c)
    for s in w.starts[c].tolist():
        mirrored = len(arr) - w.span - s
        assert np.array_equal(w.window(c, s, True), arr[::-1][mirrored + w.offsets])
    one = Windows(ds.train, cache, (Scale(1, 1),), "video", frozenset({FALL}))
    ts = TrainSet(one, 8, AugConfig(mode="none"), None, seed=0, backwards=frozenset({FALL}))
    assert ts.backwards == []


def test_the_loss_of_not_c_is_minus_log_one_minus_p_c():
    torch.manual_seed(0)
    logits = torch.randn(4, 3)
    y = torch.tensor([0, -1, 2, -3])  # fall; not fall; class 2; not class 2
    p = torch.softmax(logits, 1)
    want = -torch.log(torch.stack([p[0, 0], 1 - p[1, 0], p[2, 2], 1 - p[3, 2]])).mean()
    assert torch.allclose(backwards.loss(logits, y), want, atol=1e-6)
    top = logits.argmax(1)
    assert backwards.correct(logits, y) == int(
        (top[0] == 0) + (top[1] != 0) + (top[2] == 2) + (top[3] != 2)
    )


def test_a_step_on_not_fall_lowers_the_fall_and_leaves_the_rest_to_the_model():
    logits = torch.tensor([[2.0, 0.0, -1.0]], requires_grad=True)
    backwards.loss(logits, torch.tensor([-1])).backward()
    g = logits.grad[0]
    assert g[0] > 0 and g[1] < 0 and g[2] < 0  # descent lowers the fall, raises the others
    assert torch.isclose(g[1] / g[2], torch.exp(torch.tensor(1.0)))  # in their own proportion
