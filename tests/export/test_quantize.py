"""export/quantize.py: which layers --keep-float leaves in float, and the balanced calibration."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest

from edge_hf.runtime import DEMO_MODEL
from export.data import balanced, motion
from export.quantize import QuantOptions, float_layers
from models.errors import BadArguments
from tests.windows import FakeWindows


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
        BadArguments,
        match=r"--keep-float: expected names from \['stem', 'se', 'head'\], found 'stme'",
    ):
        QuantOptions(keep_float=("stme",))


def test_calibration_spreads_from_still_to_fast():
    still = np.zeros((50, 8, 8, 3), np.uint8)
    moving = np.zeros((50, 8, 8, 3), np.uint8)
    moving[25:] = 200  # one jump: the only windows that move are around frame 25
    cal = balanced(FakeWindows([still, moving]), np.array([0]), 5)
    moves = sorted(motion(x[0], x[-1]) for x in cal.x)
    # the stillest and the fastest windows are both in (2 of 96 windows move: a random 5 would
    # miss them nine times in ten)
    assert len(cal) == 5 and moves[0] == 0 and moves[-1] > 100


def _two_convs() -> ov.Model:
    import openvino.opset13 as ops

    rng = np.random.default_rng(0)
    x = ops.parameter([1, 3, 32, 32], np.float32, name="x")
    w1 = ops.constant(rng.normal(size=(4, 3, 1, 1)).astype(np.float32))
    w2 = ops.constant(rng.normal(size=(2, 4, 1, 1)).astype(np.float32))
    conv = ops.convolution(ops.relu(x), w1, [1, 1], [0, 0], [0, 0], [1, 1])
    out = ops.convolution(conv, w2, [1, 1], [0, 0], [0, 0], [1, 1])
    return ov.Model([out], [x])


# nncf: the mean over the 40 hyperframes of each one's max, (39 x ~1 + 100) / 40
@pytest.mark.parametrize(
    ("ranges", "widest"), [("minmax", 100.0), ("quantile", 1.0), ("nncf", 3.47)]
)
def test_a_rare_extreme_value_sets_the_minmax_range_but_not_the_quantile_one(ranges, widest):
    from export.data import EvalData, Hyperframes
    from export.quantize import quantize

    x = np.random.default_rng(1).uniform(0, 1, (40, 3, 32, 32)).astype(np.float32)
    x[7, 0, 3, 3] = 100.0  # one value in 122880: a flash on one pixel of one hyperframe
    h = Hyperframes(x, np.zeros(40, int), np.arange(40))
    data = EvalData(None, h, h, h, False, (40, 40))
    q = quantize(_two_convs(), data, QuantOptions(ranges=ranges, keep_float=()))
    highs = [
        float(op.input_value(2).get_node().get_data().max())
        for op in q.get_ordered_ops()
        if op.get_type_name() == "FakeQuantize" and op.input_value(0).get_partial_shape()[1] == 3
    ]
    assert highs and max(highs) == pytest.approx(widest, abs=0.01)
