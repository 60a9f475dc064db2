"""OpenVINO IR from the exported ONNX graph, with the spec in ``rt_info``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import openvino as ov

from edge_hf.spec import HyperframeSpec, write_openvino_spec

# OpenVINO's CPU plugin computes in bf16 on CPUs that have it; parity and accuracy are measured
# in f32, as the runtime's backend runs by default.
F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def convert(onnx_path: Path) -> ov.Model:
    """The ONNX file as an OpenVINO model. ovc reads a path with a comma as several models
    (an --out folder named "a,b" failed with a traceback): such a path is converted from a
    copy under a plain name."""
    if "," not in str(onnx_path):
        return ov.convert_model(str(onnx_path))
    with tempfile.TemporaryDirectory(prefix="edge-hf-export-") as tmp:
        plain = Path(tmp) / "model.onnx"
        shutil.copyfile(onnx_path, plain)
        return ov.convert_model(str(plain))


def save(model: ov.Model, spec: HyperframeSpec, path: Path, fp16: bool = False) -> None:
    """Write ``path`` (.xml) and its .bin. ``fp16`` stores float weights as FP16 (OpenVINO's
    default, off here: FP32 weights keep parity with the trained model)."""
    model = model.clone()
    write_openvino_spec(model, spec)
    ov.save_model(model, str(path), compress_to_fp16=fp16)
