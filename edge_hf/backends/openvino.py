"""OpenVINO: CPU with the LATENCY hint and one reused infer request on shared-memory tensors."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov

from edge_hf.backends.base import (
    BackendOptions,
    check_io,
    check_output_shape,
    reason,
    require_file,
)
from edge_hf.errors import ModelError, SpecError
from edge_hf.spec import spec_from_openvino


class OvBackend:
    name = "openvino"

    def __init__(self, path: Path, opts: BackendOptions) -> None:
        self.path = path
        model = read_model(path)
        core = ov.Core()
        try:
            self.spec = spec_from_openvino(model, str(path))
        except SpecError as e:
            raise ModelError(str(e)) from None
        check_io(
            path,
            self.spec,
            [
                (i.get_any_name(), _dims(i), str(i.get_element_type().to_dtype()))
                for i in model.inputs
            ],
            [(o.get_any_name(), _dims(o)) for o in model.outputs],
        )
        config: dict[str, Any] = {
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": opts.precision,
        }
        if opts.device == "CPU":
            # One thread by default, as for onnxruntime: the other cores decode video, and a
            # camera calls the model every 40 ms, where a second thread's spin-then-sleep costs
            # more CPU than it saves time. No pinning: on a box shared with decoders (or other
            # services) a pinned thread waits for its busy core. See bench/ (paced CPU).
            config["INFERENCE_NUM_THREADS"] = opts.threads or 1
            config["ENABLE_CPU_PINNING"] = False
        elif opts.threads:
            config["INFERENCE_NUM_THREADS"] = opts.threads
        self.compiled = core.compile_model(model, opts.device, config)
        self.request = self.compiled.create_infer_request()
        self._device = opts.device
        if not model.outputs[0].get_partial_shape()[1].is_static:
            self._probe_output(model.outputs[0].get_any_name())

    def _probe_output(self, name: str) -> None:
        """One inference on black frames, to learn the class count the graph leaves open."""
        for k in range(len(self.spec.inputs)):
            self.request.set_input_tensor(
                k, ov.Tensor(np.zeros(self.spec.input_shape(k), np.uint8))
            )
        try:
            self.request.infer()
        except Exception as e:  # RuntimeError subclasses
            raise ModelError(f"{self.path}: a first inference failed ({reason(e)})") from None
        check_output_shape(self.path, self.spec, name, self.request.get_output_tensor(0).shape)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "device": self._device,
            "precision": self.compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
            "inputs": {i.get_any_name(): str(i.get_partial_shape()) for i in self.compiled.inputs},
            "outputs": {
                o.get_any_name(): str(o.get_partial_shape()) for o in self.compiled.outputs
            },
        }

    def bind(self, inputs: list[np.ndarray], output: np.ndarray) -> None:
        # Tensors for every batch size 1..B, made once: views of the first n rows.
        self._tensors = [
            (
                [ov.Tensor(arr[:n], shared_memory=True) for arr in inputs],
                ov.Tensor(output[:n], shared_memory=True),
            )
            for n in range(1, len(output) + 1)
        ]
        self._bound = 0
        self._set(1)

    def _set(self, n: int) -> None:
        ins, out = self._tensors[n - 1]
        for k, t in enumerate(ins):
            self.request.set_input_tensor(k, t)
        self.request.set_output_tensor(0, out)
        self._bound = n

    def infer(self, n: int | None = None) -> None:
        n = n or len(self._tensors)
        if n != self._bound:
            self._set(n)
        # Synchronous, in this thread: start_async + wait hands every call to OpenVINO's executor
        # thread and waits for it to wake, which on a busy box doubled the paced p50 (bench/).
        # The price is a small results dict per call (views of the bound output, no copies).
        self.request.infer(share_outputs=True)


def read_model(path: Path) -> Any:
    """An OpenVINO IR (.xml with its .bin) or ONNX file as an ``ov.Model``; anything else is a
    ModelError saying what is wrong with it."""
    require_file(path)
    if path.suffix == ".xml" and not path.with_suffix(".bin").is_file():
        raise ModelError(
            f"{path}: its weights file {path.with_suffix('.bin')} is missing; "
            "copy the .xml and .bin together"
        )
    if path.suffix == ".xml":
        _require_ir(path)
    try:
        with _stderr_kept_unless_failed():
            return ov.Core().read_model(str(path))
    except Exception as e:  # OpenVINO raises RuntimeError subclasses with long traces
        raise ModelError(f"{path}: not a loadable OpenVINO/ONNX model ({reason(e)})") from None


@contextlib.contextmanager
def _stderr_kept_unless_failed() -> Iterator[None]:
    """Hold what C++ writes on stderr (file descriptor 2) while OpenVINO reads a model: on a bad
    file it tries every frontend, and TensorFlow's prints absl lines ("Error parsing
    text-format tensorflow.GraphDef") before the error we turn into one line. Kept and
    written out if the read succeeds. Model loading happens before any other thread runs."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        text = held.read()
    if text:
        os.write(2, text)


def _require_ir(path: Path) -> None:
    """Refuse an .xml that is not an OpenVINO IR before OpenVINO tries every frontend on it
    (the TensorFlow one prints absl noise on stderr)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise ModelError(f"model file {path} cannot be read ({e.strerror})") from None
    if b"<net" not in head:
        raise ModelError(
            f"{path}: not an OpenVINO IR (no <net> element at its start); pass the .xml that "
            "`python -m export` (or OpenVINO's ovc) wrote, with its .bin beside it"
        )


def _dims(port: Any) -> list[int | None]:
    return [d.get_length() if d.is_static else None for d in port.get_partial_shape()]
