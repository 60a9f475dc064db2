"""Measurements made in the export run itself: logits of every format on the validation
hyperframes (parity with the trained model, accuracy) and latency.

Every exported file is run through the device runtime's own backends (``edge_hf.backends``), so
what is measured is what a device loads.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import openvino as ov
import torch

from edge_hf.backends import load_backend
from edge_hf.sampler import input_buffers
from export.data import Hyperframes
from export.to_openvino import F32
from models.dataset import split_inputs
from models.errors import ParityFailed
from models.evaluation.metrics import confusion, summary

# max |logit difference| relative to the trained model's logit range on the validation set
PARITY_TOL = 1e-4
PARITY_TOL_FP16 = 1e-2  # --fp16 rounds every weight to 11 significant bits
FIX = "the exported graph differs from the trained model: please report it with the checkpoint"
BATCH = 8
WARMUP = 5
ROUNDS = 10  # latency: every format is timed in turn, this many times


# ---- logits ----------------------------------------------------------------------------------
def torch_logits(net: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    out = []
    with torch.inference_mode():
        for i in range(0, len(x), BATCH):
            out.append(net(torch.from_numpy(x[i : i + BATCH])).float().numpy())
    return np.concatenate(out)


def backend_logits(path: Path, x: np.ndarray, n_classes: int) -> np.ndarray:
    """Logits of a model file as the runtime computes them: bound buffers, batches of BATCH (the
    last one padded)."""
    b = load_backend(path)
    bufs = input_buffers(b.spec, BATCH)
    out = np.zeros((BATCH, n_classes), np.float32)
    b.bind(bufs, out)
    logits = np.empty((len(x), n_classes), np.float32)
    for i in range(0, len(x), BATCH):
        chunk = x[i : i + BATCH]
        for buf, part in zip(bufs, split_inputs(chunk, b.spec.inputs), strict=True):
            buf[: len(part)] = part
            buf[len(part) :] = part[-1]
        b.infer()
        logits[i : i + len(chunk)] = out[: len(chunk)]
    return logits


# ---- parity and accuracy ---------------------------------------------------------------------
def check_parity(
    reference: np.ndarray, got: np.ndarray, name: str, tol: float, fix: str = FIX
) -> dict:
    """Raise ParityFailed unless ``got`` is within ``tol`` of the reference's logit range and picks
    the same class for every hyperframe, except a near-tie: one whose top two logits are closer
    than twice the allowed difference may go either way."""
    spread = float(reference.max() - reference.min()) or 1.0
    diff = float(np.abs(got - reference).max())
    same = reference.argmax(1) == got.argmax(1)
    top2 = np.sort(reference, axis=1)[:, -2:]
    decided = top2[:, 1] - top2[:, 0] > 2 * tol * spread
    result = {
        "max_abs": diff,
        "relative": diff / spread,
        "tolerance": tol,
        "argmax_agree": float(same.mean()),
        "near_ties": int((~decided).sum()),
    }
    changed = int((~same & decided).sum())
    if diff / spread > tol or changed:
        raise ParityFailed(
            f"parity failed for {name}: max |logit difference| {diff:.3g} is "
            f"{diff / spread:.2g} of the logit range {spread:.3g} (allowed {tol:g}), "
            f"{changed} of {len(same)} validation hyperframes change class; {fix}"
        )
    return result


def accuracy(logits: np.ndarray, val: Hyperframes, video_level: bool, classes) -> dict:
    """Top-1 and macro-F1 as the trainer reports them (per video, its windows' logits averaged,
    for clip-labelled data; per window otherwise), and top-1 per window."""
    pred, truth = logits.argmax(1), val.y
    window_top1 = float((pred == truth).mean())
    if video_level:
        ids = np.unique(val.clip)
        pred = np.array([logits[val.clip == i].mean(0).argmax() for i in ids])
        truth = np.array([val.y[val.clip == i][0] for i in ids])
    s = summary(confusion(truth, pred, len(classes)), tuple(classes))
    return {
        "top1": s["top1"],
        "macro_f1": s["macro_f1"],
        "window_top1": window_top1,
        "confusion": s["confusion"],
    }


# ---- latency ---------------------------------------------------------------------------------
Step = Callable[[], object]


def interleaved_ms(steps: dict[str, Step], repeats: int, rounds: int = ROUNDS) -> dict[str, float]:
    """Median ms of each step over ``repeats`` timed calls, taken in ``rounds`` interleaved
    rounds so that other work on the machine slows every step alike, not whichever ran then."""
    for step in steps.values():
        for _ in range(WARMUP):
            step()
    times: dict[str, list[float]] = {k: [] for k in steps}
    per_round = max(1, -(-repeats // rounds))
    for _ in range(rounds):
        for key, step in steps.items():
            for _ in range(per_round):
                t0 = time.perf_counter()
                step()
                times[key].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1000.0 for k, v in times.items()}


def torch_step(net: torch.nn.Module, x: np.ndarray) -> Step:
    xt = torch.from_numpy(np.ascontiguousarray(x))

    def step() -> None:
        with torch.inference_mode():
            net(xt)

    return step


def backend_step(path: Path, x: np.ndarray, n_classes: int) -> tuple[Step, dict]:
    """One ``infer()`` of the runtime's own backend on ``x``, and its engine details."""
    b = load_backend(path)
    bufs = [np.ascontiguousarray(part) for part in split_inputs(x, b.spec.inputs)]
    b.bind(bufs, np.zeros((len(x), n_classes), np.float32))
    return b.infer, b.describe()


def adapter_cost(model: Path, backbone: Path, x: np.ndarray, repeats: int) -> dict:
    """Batch-1 latency of the exported model (uint8 frames in) against its backbone alone (the
    float [1, 3T, H, W] it would otherwise need), run identically, on onnxruntime and OpenVINO."""
    n, t, h, w, c = x.shape
    xf = np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, t * c, h, w), np.float32)
    steps = {}
    for engine, make in (("onnxruntime", _ort_step), ("openvino", _ov_step)):
        steps[f"{engine} model"], steps[f"{engine} backbone"] = make(model, x), make(backbone, xf)
    ms = interleaved_ms(steps, repeats)
    result = {}
    for engine in ("onnxruntime", "openvino"):
        full, bare = ms[f"{engine} model"], ms[f"{engine} backbone"]
        result[engine] = {"model_ms": full, "backbone_ms": bare, "adapter_ms": full - bare}
    return result


def _ort_step(path: Path, x: np.ndarray) -> Step:
    so = ort.SessionOptions()  # as the runtime's backend: one thread, no spinning
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    binding = s.io_binding()
    binding.bind_cpu_input(s.get_inputs()[0].name, x)
    binding.bind_output(s.get_outputs()[0].name, "cpu")
    return lambda: s.run_with_iobinding(binding)


def _ov_step(path: Path, x: np.ndarray) -> Step:
    compiled = ov.Core().compile_model(str(path), "CPU", {"PERFORMANCE_HINT": "LATENCY", **F32})
    request = compiled.create_infer_request()
    request.set_input_tensor(0, ov.Tensor(x, shared_memory=True))

    def step() -> None:
        request.start_async()
        request.wait()

    return step
