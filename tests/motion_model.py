"""A hand-built motion model that honours the model contract, for the runtime's tests.

An ONNX graph that takes the contract's uint8 ``[N, T, H, W, 3]`` BGR input and scores a *fall*
from how fast the figure's vertical centre of mass drops across the hyperframe. It has no learned
weights, builds in milliseconds for any spec (frames, size, classes), and can be made to disagree
with its own spec, which is what the runtime's tests need. (It was the embedded demo model until
a trained MobileNetV3 replaced it: ``make demo-model``.)
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edge_hf.spec import HyperframeSpec, write_onnx_spec

MOTION_SPEC = HyperframeSpec(
    frames=3,
    stride=3,
    size=(160, 160),
    classes=("normal", "fall"),
    alert_classes=(("fall", 0.8),),
    arch="motion-centroid",
    provenance=(("data", "none: hand-built, see tests/motion_model.py"),),
)
GAIN, BIAS = 80.0, 4.0  # logit_fall = GAIN * (drop of the centre of mass, in frame heights) - BIAS


def motion_model(
    spec: HyperframeSpec,
    gain: float = GAIN,
    bias: float = BIAS,
    input_shape: list[int | str] | None = None,
) -> onnx.ModelProto:
    """Logits ``[N, C]``: the first alert class scores the centroid drop, the others score 0.

    ``input_shape`` overrides the declared input (tests use it to build a model that disagrees
    with its own spec).
    """
    t, (h, _w) = spec.frames, spec.size
    c = len(spec.classes)
    target = spec.classes.index(spec.alert_classes[0][0]) if spec.alert_classes else 0
    head = np.zeros((t, c), np.float32)  # centroid trajectory [N, T] @ head -> logits
    head[-1, target], head[0, target] = gain, -gain
    if t == 1:
        head[:] = 0.0
    offset = np.zeros(c, np.float32)
    offset[target] = -bias
    consts = {
        "ax_c": np.array([4], np.int64),
        "ax_w": np.array([3], np.int64),
        "ax_h": np.array([2], np.int64),
        "rows": ((np.arange(h, dtype=np.float32) + 0.5) / h),
        "eps": np.array(1e-3, np.float32),
        "head": head,
        "offset": offset,
    }
    n = helper.make_node
    nodes = [
        n("Cast", ["frames"], ["xf"], to=TensorProto.FLOAT),
        n("ReduceMean", ["xf", "ax_c"], ["gray"], keepdims=0),  # [N,T,H,W]
        n("ReduceMean", ["gray", "ax_w"], ["row_mean"], keepdims=0),  # [N,T,H]
        n("Unsqueeze", ["row_mean", "ax_w"], ["row_mean4"]),
        n("Sub", ["gray", "row_mean4"], ["dev"]),
        n("Mul", ["dev", "dev"], ["sq"]),
        n("ReduceMean", ["sq", "ax_w"], ["row_var"], keepdims=0),  # rows with a figure vary
        n("ReduceMin", ["row_var", "ax_h"], ["floor"], keepdims=1),
        n("Sub", ["row_var", "floor"], ["excess"]),
        n("Relu", ["excess"], ["w"]),
        n("Mul", ["w", "rows"], ["wy"]),
        n("ReduceSum", ["wy", "ax_h"], ["num"], keepdims=0),
        n("ReduceSum", ["w", "ax_h"], ["den0"], keepdims=0),
        n("Add", ["den0", "eps"], ["den"]),
        n("Div", ["num", "den"], ["centroid"]),  # [N,T], 0 top .. 1 bottom
        n("MatMul", ["centroid", "head"], ["mm"]),
        n("Add", ["mm", "offset"], ["logits"]),
    ]
    shape = ["N", t, h, spec.size[1], 3]
    graph = helper.make_graph(
        nodes,
        "edge_hf_motion",
        [helper.make_tensor_value_info("frames", TensorProto.UINT8, shape)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", c])],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return _model(graph, spec)


def constant_model(spec: HyperframeSpec, logits: list[float]) -> onnx.ModelProto:
    """Every hyperframe gets ``logits``, whatever its frames; one uint8 input per ``spec.inputs``
    (a pyramid's confirming model that always accepts, or always rejects)."""
    h, w = spec.size
    names = (
        ["frames"] if len(spec.inputs) == 1 else [f"frames_{k}" for k in range(len(spec.inputs))]
    )
    n = helper.make_node
    nodes, terms = [], []
    for name in names:  # 0 * mean of every input, so each input is really read
        nodes += [
            n("Cast", [name], [f"{name}_f"], to=TensorProto.FLOAT),
            n("ReduceMean", [f"{name}_f", "axes"], [f"{name}_m"], keepdims=0),  # [N]
            n("Unsqueeze", [f"{name}_m", "one"], [f"{name}_u"]),  # [N, 1]
            n("Mul", [f"{name}_u", "zero"], [f"{name}_z"]),  # [N, C] zeros
        ]
        terms.append(f"{name}_z")
    nodes += [n("Sum", terms, ["zeros"]), n("Add", ["zeros", "bias"], ["logits"])]
    consts = {
        "axes": np.array([1, 2, 3, 4], np.int64),
        "one": np.array([1], np.int64),
        "zero": np.zeros(len(spec.classes), np.float32),
        "bias": np.array(logits, np.float32),
    }
    graph = helper.make_graph(
        nodes,
        "edge_hf_constant",
        [
            helper.make_tensor_value_info(name, TensorProto.UINT8, ["N", s.frames, h, w, 3])
            for name, s in zip(names, spec.inputs, strict=True)
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", len(spec.classes)])],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return _model(graph, spec)


def brightness_model(spec: HyperframeSpec, level: float, gain: float = 100.0) -> onnx.ModelProto:
    """The first alert class's logit is ``gain * (mean brightness / 255 - level)`` over the
    whole hyperframe, the others' 0: an alert exactly where every frame of it is bright."""
    c = len(spec.classes)
    target = spec.classes.index(spec.alert_classes[0][0])
    scale, bias = np.zeros(c, np.float32), np.zeros(c, np.float32)
    scale[target], bias[target] = gain / 255.0, -gain * level
    h, w = spec.size
    n = helper.make_node
    nodes = [
        n("Cast", ["frames"], ["xf"], to=TensorProto.FLOAT),
        n("ReduceMean", ["xf", "axes"], ["mean"], keepdims=0),  # [N]
        n("Unsqueeze", ["mean", "one"], ["mean1"]),  # [N, 1]
        n("Mul", ["mean1", "scale"], ["scaled"]),  # [N, C]
        n("Add", ["scaled", "bias"], ["logits"]),
    ]
    consts = {
        "axes": np.array([1, 2, 3, 4], np.int64),
        "one": np.array([1], np.int64),
        "scale": scale,
        "bias": bias,
    }
    graph = helper.make_graph(
        nodes,
        "edge_hf_brightness",
        [helper.make_tensor_value_info("frames", TensorProto.UINT8, ["N", spec.frames, h, w, 3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", c])],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return _model(graph, spec)


def _model(graph: onnx.GraphProto, spec: HyperframeSpec) -> onnx.ModelProto:
    """An opset-18 model around ``graph`` with ``spec`` inside, checked."""
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="edge-hf"
    )
    model.ir_version = 9
    write_onnx_spec(model, spec)
    onnx.checker.check_model(model)
    return model
