"""Backends by name. A model file's suffix picks one unless ``--backend`` says otherwise."""

from __future__ import annotations

import importlib
from pathlib import Path

from edge_hf.backends.base import Backend, BackendOptions, require_file
from edge_hf.errors import ModelError, UsageError

# name -> (module, class, suffixes it reads, pip extra that provides it)
BACKENDS = {
    "onnxruntime": ("edge_hf.backends.onnxruntime", "OrtBackend", (".onnx",), ""),
    "openvino": ("edge_hf.backends.openvino", "OvBackend", (".xml", ".onnx"), "openvino"),
}
_BY_SUFFIX = {".onnx": "onnxruntime", ".xml": "openvino"}

__all__ = ["BACKENDS", "Backend", "BackendOptions", "load_backend"]


def load_backend(path: Path, choice: str = "auto", opts: BackendOptions | None = None) -> Backend:
    opts = opts or BackendOptions()
    require_file(path)
    if choice == "auto":
        choice = _BY_SUFFIX.get(path.suffix.lower(), "")
        if not choice:
            raise ModelError(
                f"{path}: unknown model type {path.suffix!r}; expected one of "
                f"{sorted(_BY_SUFFIX)} (ONNX or OpenVINO IR)"
            )
    if choice not in BACKENDS:
        raise UsageError(f"--backend {choice!r}: expected one of {['auto', *BACKENDS]}")
    if opts.providers and choice != "onnxruntime":
        raise UsageError(
            f"--providers {','.join(opts.providers)}: execution providers are onnxruntime's, but "
            f"{path.name} runs on {choice}; pass a .onnx model (or --backend onnxruntime)"
        )
    module, cls, suffixes, extra = BACKENDS[choice]
    if path.suffix.lower() not in suffixes:
        raise ModelError(
            f"{path}: the {choice} backend reads {list(suffixes)} files, not {path.suffix!r}"
        )
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise UsageError(
            f"--backend {choice}: {e.name} is not installed; `pip install 'edge-hf[{extra}]'`"
        ) from None
    return getattr(mod, cls)(path, opts)
