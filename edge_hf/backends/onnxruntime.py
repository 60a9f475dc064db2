"""onnxruntime: CPU by default; TensorRT/CUDA providers selectable for a Jetson."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from edge_hf.backends.base import (
    BackendOptions,
    check_io,
    check_output_shape,
    reason,
    require_file,
)
from edge_hf.errors import ModelError, SpecError, UsageError
from edge_hf.spec import spec_from_onnx_metadata

# Warnings only from here on: onnxruntime's default logger also speaks before a session exists
# (e.g. "Failed to persist telemetry device ID" for a user without a writable home).
ort.set_default_logger_severity(3)

PROVIDERS = {
    "tensorrt": "TensorrtExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "cpu": "CPUExecutionProvider",
}


def resolve_providers(names: tuple[str, ...]) -> list[str]:
    """Short or full provider names -> onnxruntime names, refusing ones this build lacks."""
    available = ort.get_available_providers()
    out = []
    for n in names or ("cpu",):
        full = PROVIDERS.get(n.lower(), n)
        if full not in available:
            raise UsageError(
                f"--providers {n}: not available in this onnxruntime build (available: "
                f"{', '.join(available)}); on a Jetson install NVIDIA's onnxruntime-gpu wheel"
            )
        out.append(full)
    return out


class OrtBackend:
    name = "onnxruntime"

    def __init__(self, path: Path, opts: BackendOptions) -> None:
        require_file(path)
        self.path = path
        so = ort.SessionOptions()
        so.log_severity_level = 3
        # Spinning intra-op threads busy-wait between runs and steal the cores that decode
        # video; on a small box that costs more than it saves (see bench/).
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # One thread by default: the other cores are decoding video (see bench/).
        so.intra_op_num_threads = opts.threads or 1
        so.inter_op_num_threads = 1
        providers = resolve_providers(opts.providers)
        try:
            self.session = ort.InferenceSession(str(path), so, providers=providers)
        except Exception as e:  # onnxruntime raises several unrelated types for a bad file
            raise ModelError(f"{path}: not a loadable ONNX model ({reason(e)})") from None
        try:
            self.spec = spec_from_onnx_metadata(
                self.session.get_modelmeta().custom_metadata_map, str(path)
            )
        except SpecError as e:
            raise ModelError(str(e)) from None
        ins, outs = self.session.get_inputs(), self.session.get_outputs()
        check_io(
            path,
            self.spec,
            [(i.name, _dims(i.shape), _dtype(i.type)) for i in ins],
            [(o.name, _dims(o.shape)) for o in outs],
        )
        if not isinstance(outs[0].shape[1], int):
            self._probe_output(ins, outs[0].name)
        self._bindings: list[Any] = []  # one per batch size 1..B, made by bind()
        self._bound: tuple[list[np.ndarray], np.ndarray] | None = None
        self._names = [i.name for i in ins], outs[0].name

    def _probe_output(self, ins: list[Any], out_name: str) -> None:
        """One inference on black frames, to learn the class count the graph leaves open."""
        feed = {i.name: np.zeros(self.spec.input_shape(k), np.uint8) for k, i in enumerate(ins)}
        try:
            out = self.session.run([out_name], feed)[0]
        except Exception as e:  # the same unrelated types as loading
            raise ModelError(f"{self.path}: a first inference failed ({reason(e)})") from None
        check_output_shape(self.path, self.spec, out_name, out.shape)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "providers": self.session.get_providers(),
            "inputs": {i.name: [_d(x) for x in i.shape] for i in self.session.get_inputs()},
            "outputs": {o.name: [_d(x) for x in o.shape] for o in self.session.get_outputs()},
        }

    def bind(self, inputs: list[np.ndarray], output: np.ndarray) -> None:
        in_names, out_name = self._names
        self._bindings = []
        self._bound = (inputs, output)  # ORT keeps only their addresses: they must outlive it
        for n in range(1, len(output) + 1):  # rows are contiguous: the first n share a pointer
            b = self.session.io_binding()
            for name, arr in zip(in_names, inputs, strict=True):
                b.bind_input(name, "cpu", 0, np.uint8, [n, *arr.shape[1:]], arr.ctypes.data)
            shape = [n, *output.shape[1:]]
            b.bind_output(out_name, "cpu", 0, np.float32, shape, output.ctypes.data)
            self._bindings.append(b)

    def infer(self, n: int | None = None) -> None:
        self.session.run_with_iobinding(self._bindings[(n or len(self._bindings)) - 1])


def _dims(shape: list[Any]) -> list[int | None]:
    return [d if isinstance(d, int) else None for d in shape]


def _d(x: Any) -> Any:
    return x if isinstance(x, int) else "?"


def _dtype(t: str) -> str:
    return t.removeprefix("tensor(").removesuffix(")")
