"""The backend seam: load a model file, expose its spec, run it on preallocated buffers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from edge_hf.errors import ModelError
from edge_hf.paths import file_problem
from edge_hf.redact import printable
from edge_hf.spec import HyperframeSpec


@dataclass(frozen=True)
class BackendOptions:
    threads: int = 0  # 0: one (the other cores decode video; see bench/ for why)
    providers: tuple[str, ...] = ()  # onnxruntime execution providers, in priority order
    device: str = "CPU"  # OpenVINO device
    # OpenVINO's CPU plugin defaults to bf16 on CPUs that have it, which moves logits by far more
    # than export parity allows; f32 keeps the model's accuracy as measured. "bf16"/"f16" opt in.
    precision: str = "f32"


class Backend(Protocol):
    name: str
    path: Path
    spec: HyperframeSpec

    def describe(self) -> dict[str, Any]:
        """Inputs, outputs and engine details, for ``edge-hf info``."""

    def bind(self, inputs: list[np.ndarray], output: np.ndarray) -> None:
        """Use these buffers for every later ``infer()``: inputs as the spec's shapes with a
        batch of B (``[B, T, H, W, 3]``), output ``[B, classes]`` float32. Called once; the
        buffers must outlive the backend's use."""

    def infer(self, n: int | None = None) -> None:
        """Run the model on the first ``n`` (1 to B; None: all B) rows of the bound inputs, writing their
        logits into the first ``n`` rows of the bound output. Allocation-free: a binding per
        batch size is made in ``bind``."""


Dims = Sequence[int | None]


def check_io(
    where: Path,
    spec: HyperframeSpec,
    inputs: list[tuple[str, Dims, str]],
    outputs: list[tuple[str, Dims]],
) -> None:
    """Refuse a model whose inputs/outputs disagree with its own spec, saying how."""
    fix = "re-export the model with `python -m export` so its graph and spec agree"
    if len(inputs) != len(spec.inputs):
        raise ModelError(
            f"{where}: the model has {len(inputs)} input(s) but its spec describes "
            f"{len(spec.inputs)}; {fix}"
        )
    for k, (name, dims, dtype) in enumerate(inputs):
        want = spec.input_shape(k)[1:]
        found = tuple(dims[1:])
        if dtype != "uint8":
            raise ModelError(
                f"{where}: input {name!r} must be uint8 (BGR frames), found {dtype}; {fix}"
            )
        if len(dims) != 5 or found != want:
            raise ModelError(
                f"{where}: input {name!r} has shape {_fmt(dims)} but its spec says "
                f"[N, {', '.join(map(str, want))}] (frames, H, W, 3); {fix}"
            )
    if not outputs:
        raise ModelError(f"{where}: the model has no output; {fix}")
    name, dims = outputs[0]
    n = len(spec.classes)
    if len(dims) != 2 or dims[1] not in (n, None):
        raise ModelError(
            f"{where}: output {name!r} has shape {_fmt(dims)} but its spec has {n} "
            f"classes, so [N, {n}] was expected; {fix}"
        )


def _fmt(dims: Dims) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def require_file(path: Path) -> None:
    """Refuse a model file that is missing, unreadable or has a name the engines cannot take,
    with the reason in words (onnxruntime would say "system error number 13")."""
    shown = printable(str(path))
    if shown != str(path):
        raise ModelError(
            f"model file {shown}: the name has bytes that are not UTF-8 or control characters, "
            "which onnxruntime and OpenVINO cannot open; rename the file"
        )
    problem = file_problem(path)
    if problem == "does not exist":
        raise ModelError(
            f"model file {path} does not exist; check --model "
            "(or omit it to run the embedded demo model)"
        )
    if problem:
        raise ModelError(f"model file {path} {problem}")


def check_output_shape(where: Path, spec: HyperframeSpec, name: str, shape: Sequence[int]) -> None:
    """The shape a model really produced, for a model whose declared class count is dynamic:
    a disagreement with the spec would make every score belong to the wrong class."""
    n = len(spec.classes)
    if tuple(shape) != (1, n):
        raise ModelError(
            f"{where}: output {name!r} is [N, ?] in the graph and really has shape "
            f"{_fmt(list(shape))} for one hyperframe, but its spec has {n} classes, so [1, {n}] "
            "was expected; re-export the model with `python -m export` so its graph and spec "
            "agree"
        )


def reason(e: BaseException) -> str:
    """The line of an engine's exception that says what is wrong, not where in C++ it was."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    useful = [
        ln for ln in lines if not ln.startswith("Exception from ") and "error number" not in ln
    ]
    return (useful or lines or [type(e).__name__])[0][:200]
