"""ONNX export: the folded model with its input adapter inside the graph, the contract's uint8
``[N, T, H, W, 3]`` input (one per scale for a pyramid) with a dynamic N, the spec in
``metadata_props``, checked.

Here, beside the model it is the deployed form of: ``python -m export`` writes it with the other
formats built from it, and ``python -m models.evaluate`` when it is given a checkpoint."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import onnx
import torch
from torch import nn

from edge_hf.spec import HyperframeSpec, write_onnx_spec
from models.model import HyperframeNet

OPSET = 18
INPUT, OUTPUT = "frames", "logits"


def export_onnx(net: HyperframeNet, spec: HyperframeSpec, path: Path) -> None:
    """The whole model: uint8 frames in, logits out, spec in the file."""
    save_onnx(trace_model(net, spec), spec, path)


def trace_model(net: HyperframeNet, spec: HyperframeSpec) -> onnx.ModelProto:
    """The whole model's graph, no spec yet: the same for every spec of one network (its
    thresholds and rules change, its inputs do not), so an export traces it once."""
    if not net.adapter.folded:  # scaling per pixel in the graph would cost more than conv1
        raise ValueError("fold() the model before export")
    n = len(spec.inputs)
    examples = tuple(torch.zeros(spec.input_shape(k, batch=2), dtype=torch.uint8) for k in range(n))
    names = [INPUT] if n == 1 else [f"{INPUT}_{k}" for k in range(n)]  # frames_0: the first scale
    module = Deployed(net) if n == 1 else DeployedPyramid(net)
    return _trace(module, examples, names)


def save_onnx(graph: onnx.ModelProto, spec: HyperframeSpec, path: Path) -> None:
    """A traced graph with ``spec`` inside, checked, written (``graph`` itself is left as it is)."""
    model = onnx.ModelProto()
    model.CopyFrom(graph)
    write_onnx_spec(model, spec)
    model.producer_name = "edge-hf export"
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


class FramesToChannels(nn.Module):
    """The input adapter as exported: uint8 ``[N, T, H, W, 3]`` -> float ``[N, 3T, H, W]``,
    frame-major, for a model whose scaling is folded into conv1.

    The same permutation as ``models.model.InputAdapter``, spelt as one 4-D NHWC -> NCHW
    transpose with the frames folded into the batch: OpenVINO's CPU plugin runs that with a JIT
    kernel (0.03 ms at 160 px, T=3), where the 5-D transpose takes its reference path (0.07 ms,
    a tenth of MobileNetV3-small's whole inference). Parity with the trained model checks that
    the two agree."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, h, w, c = x.shape
        return x.reshape(n * t, h, w, c).permute(0, 3, 1, 2).reshape(n, t * c, h, w).float()


class Deployed(nn.Module):
    def __init__(self, net: HyperframeNet) -> None:
        super().__init__()
        self.adapter = FramesToChannels()
        self.backbone = net.backbone

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(self.adapter(x))


class DeployedPyramid(nn.Module):
    """A pyramid as exported: one uint8 input per scale, the scales through the backbone as one
    batch, the head on their features side by side (models.pyramid.PyramidNet.classify)."""

    def __init__(self, net: HyperframeNet) -> None:
        super().__init__()
        self.adapter = FramesToChannels()
        self.net = net

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.net.classify(self.net.backbone(self.adapter(torch.cat(xs, 0))))


def backbone_of(net: HyperframeNet, spec: HyperframeSpec, out: Path) -> None:
    """The folded backbone alone, on the float ``[N, 3T, H, W]`` the input adapter makes: what
    the adapter's cost is measured against; not a deliverable (no spec: the runtime will not
    load it). Traced, not cut from the exported graph: with T=1 the adapter's last reshape is a
    no-op the exporter drops, and the backbone then reads the batch size from the uint8 input's
    shape. Traced by TorchScript's exporter: 0.3 s where torch.export takes 7 s on MobileNetV3,
    and the same operators but for the pooling's spelling (GlobalAveragePool and Flatten for
    ReduceMean and Reshape)."""
    n, t, h, w, c = spec.input_shape(0, batch=2)
    example = torch.zeros((n, t * c, h, w), dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its deprecation: torch.export is the deliverables'
        torch.onnx.export(
            net.backbone,
            (example,),
            str(out),
            dynamo=False,
            input_names=["x"],
            output_names=[OUTPUT],
            dynamic_axes={"x": {0: "N"}},
            opset_version=OPSET,
        )


def _trace(
    module: nn.Module, examples: tuple[torch.Tensor, ...], input_names: list[str]
) -> onnx.ModelProto:
    batch = torch.export.Dim("N")
    # The exporter narrates each stage on stdout and warns about its own internals; our output
    # is the report, so both are captured (a failure still raises with its own message).
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module,
            examples,
            dynamo=True,
            input_names=input_names,
            output_names=[OUTPUT],
            # forward(x), or forward(*xs) whose varargs torch.export sees as one nested input
            dynamic_shapes=({0: batch},)
            if len(examples) == 1
            else (({0: batch},) * len(examples),),
            opset_version=OPSET,
            external_data=False,
            verbose=False,
        )
    return program.model_proto
