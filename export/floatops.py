"""Which layers of an INT8 model still run in float, by their PyTorch names.

NNCF leaves a layer in float for two reasons: ``--keep-float`` put its group in the ignored
scope, or accuracy control (``--max-drop``) reverted it. Neither is written into the model file
and NNCF only logs the second, so this reads the quantized graph itself: a convolution or
matrix multiply runs in INT8 when its weights come from a FakeQuantize or from an 8-bit (or
4-bit) constant; otherwise it is float. The names are OpenVINO's (opaque, from the ONNX export),
mapped to the trained network's modules by order and weight count when the two agree.

    python -m export.floatops MODEL-INT8.xml

prints the float layers of an INT8 file (module names when the export's ``report.json`` lies
beside it: the network is rebuilt from its architecture, no weights needed). Exit codes: 0 done,
2 bad usage, 3 the model file is missing or not an OpenVINO IR.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import openvino as ov

from edge_hf.backends.openvino import read_model
from edge_hf.errors import ModelError, SpecError

COMPUTE = ("Convolution", "GroupConvolution", "MatMul")
# what lies between a weight constant and its layer: decompression, zero point, layout
_PASS = ("Convert", "Multiply", "Subtract", "Reshape", "Transpose", "Unsqueeze", "Squeeze")
_LOW_BITS = ("i8", "u8", "i4", "u4")


def _root(node: Any) -> Any:
    """Follow a weight path up past decompression and layout ops to what it starts from."""
    while node.get_type_name() in _PASS:
        node = node.input_value(0).get_node()
    return node


def _weights(op: Any) -> Any | None:
    """The input of ``op`` that carries constant weights (a Constant or a FakeQuantize of
    one, under decompression), or None: a MatMul of two activations has none."""
    for i in (1, 0) if op.get_type_name() == "MatMul" else (1,):
        src = _root(op.input_value(i).get_node())
        inner = (
            _root(src.input_value(0).get_node()) if src.get_type_name() == "FakeQuantize" else src
        )
        if inner.get_type_name() == "Constant":
            return op.input(i)
    return None


def layers(model: ov.Model) -> list[Any]:
    """The model's convolutions and matrix multiplies with constant weights, in graph order."""
    return [
        op
        for op in model.get_ordered_ops()
        if op.get_type_name() in COMPUTE and _weights(op) is not None
    ]


def is_int8(op: Any) -> bool:
    """Whether ``op``'s weights are quantized (FakeQuantize, or an 8- or 4-bit constant)."""
    src = _root(_weights(op).get_source_output().get_node())
    if src.get_type_name() == "FakeQuantize":
        return True
    return src.get_output_element_type(0).get_type_name() in _LOW_BITS


def in_float(model: ov.Model) -> list[str]:
    """OpenVINO names of the layers whose weights are not quantized."""
    return [op.get_friendly_name() for op in layers(model) if not is_int8(op)]


def torch_names(model: ov.Model, net: Any) -> dict[str, str]:
    """OpenVINO layer name -> the module's name in ``net`` (timm's: ``blocks.2.1.conv_dw``,
    ``conv_head``, ``classifier``), matched in order with every pair's weight count equal;
    empty when the two do not line up (another network, a fused branch)."""
    import torch

    mods = [
        (name, m)
        for name, m in net.named_modules()
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))
    ]
    ops = layers(model)
    counts = [math.prod(d.get_length() for d in _weights(op).get_partial_shape()) for op in ops]
    if len(mods) != len(ops) or any(
        m.weight.numel() != n for (_, m), n in zip(mods, counts, strict=True)
    ):
        return {}
    prefix = _common_prefix([name for name, _ in mods])
    return {
        op.get_friendly_name(): name[len(prefix) :] for op, (name, _) in zip(ops, mods, strict=True)
    }


def _common_prefix(names: list[str]) -> str:
    """``backbone.`` when every name starts with it: the wrapper's, not the network's."""
    first = names[0].split(".")[0] + "." if names else ""
    return first if first != "." and all(n.startswith(first) for n in names) else ""


def summary(model: ov.Model, net: Any, ignored: list[str]) -> dict:
    """What the report says: every float layer by name, which came from the ignored scope
    (``--keep-float``) and which from accuracy control, of how many layers in all."""
    names, ops = torch_names(model, net), layers(model)
    floats = [op.get_friendly_name() for op in ops if not is_int8(op)]
    return {
        "layers": [names.get(n, n) for n in floats],
        "by_accuracy_control": [names.get(n, n) for n in floats if n not in set(ignored)],
        "of": len(ops),
    }


def _names_beside(path: Path, model: ov.Model) -> dict[str, str]:
    """Module names from the network the export's report.json beside ``path`` describes."""
    try:
        report = json.loads((path.parent / "report.json").read_text())
        from edge_hf.spec import HyperframeSpec
        from models.checkpoint import network

        spec = HyperframeSpec.from_dict(report["spec"])
        net = network(spec, report["checkpoint"]["config"])
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, SpecError):  # none, not ours
        return {}
    return torch_names(model, net)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m export.floatops", description="The layers of an INT8 model left in float."
    )
    ap.add_argument("model", type=Path, help="an OpenVINO IR (.xml), e.g. model-int8.xml")
    path = ap.parse_args(argv).model
    try:
        if path.suffix.lower() != ".xml":
            raise ModelError(f"{path}: expected an OpenVINO IR (.xml), found {path.suffix!r}")
        if not path.is_file():
            raise ModelError(f"{path}: no such file")
        model = read_model(path)
    except ModelError as e:
        print(
            f"export.floatops: error: {e}; pass the model-int8.xml an export wrote", file=sys.stderr
        )
        return 3
    names, floats = _names_beside(path, model), in_float(model)
    print(f"{path}: {len(floats)} of {len(layers(model))} layers in float")
    for name in floats:
        print(f"  {names.get(name, name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
