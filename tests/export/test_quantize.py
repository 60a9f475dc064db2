"""export/quantize.py: which layers --keep-float leaves in float, and the balanced calibration."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest

from edge_hf.runtime import DEMO_MODEL
from export.data import balanced, motion
from export.errors import UsageError
from export.quantize import QuantOptions, float_layers


@pytest.fixture(scope="module")
def mobilenet() -> ov.Model:
    """The shipped demo MobileNetV3-small (its ONNX file: float, unquantized)."""
    return ov.Core().read_model(str(DEMO_MODEL.with_name("model.onnx")))


def test_keep_float_groups_are_found_by_structure(mobilenet: ov.Model):
    stem, se, head = (float_layers(mobilenet, (g,)) for g in ("stem", "se", "head"))
    types = {op.get_friendly_name(): op.get_type_name() for op in mobilenet.get_ordered_ops()}
    first_conv = next(n for n, t in types.items() if t == "Convolution")
    assert stem == [first_conv]
    assert len(se) == 18  # MobileNetV3-small: 9 squeeze-excite blocks, reduce + expand each
    assert len(head) == 2 and types[head[1]] == "MatMul"  # conv_head and the classifier
    assert not set(stem) & set(se) and not set(se) & set(head)
    assert float_layers(mobilenet, ("stem", "head")) == stem + head


def test_unknown_keep_float_group_is_a_usage_error():
    with pytest.raises(
        UsageError,
        match=r"--keep-float: expected names from \['stem', 'se', 'head'\], found 'stme'",
    ):
        QuantOptions(keep_float=("stme",))


class _W:
    """Stands in for models.dataset.Windows: two clips of one class, 3-frame windows."""

    def __init__(self, clips):
        self.clips = clips
        self.offsets = np.arange(3)
        self.starts = [np.arange(len(c) - 2) for c in clips]
        self.labels = [np.zeros(len(c) - 2, int) for c in clips]

    def window(self, c, s):
        return self.clips[c][s + self.offsets]


def test_calibration_spreads_from_still_to_fast():
    still = np.zeros((50, 8, 8, 3), np.uint8)
    moving = np.zeros((50, 8, 8, 3), np.uint8)
    moving[25:] = 200  # one jump: the only windows that move are around frame 25
    cal = balanced(_W([still, moving]), np.array([0]), 5)
    moves = sorted(motion(x[0], x[-1]) for x in cal.x)
    # the stillest and the fastest windows are both in (2 of 96 windows move: a random 5 would
    # miss them nine times in ten)
    assert len(cal) == 5 and moves[0] == 0 and moves[-1] > 100
