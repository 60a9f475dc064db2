"""What the bench times: decode alone, the engine's limit call, the runtime on a file, paced or not.

Every function returns milliseconds per unit (frame or call) or CPU seconds, never a verdict.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import cv2
import numpy as np

from bench.inject import ORIGINAL_IS_NEEDED
from edge_hf.runtime import RunConfig, Runtime
from edge_hf.sampler import StrideSampler, resize_into
from edge_hf.sources import SourceOptions
from edge_hf.spec import HyperframeSpec

DEMO_DIR = Path(__file__).resolve().parent.parent / "edge_hf" / "assets" / "demo"
WARM_CALLS = 3  # engine calls before a timed run


class NullSink:
    def start(self, run) -> None:
        pass

    def emit(self, event) -> None:
        pass

    def close(self) -> None:
        pass


def needed_mask(spec: HyperframeSpec, every: int, frames: int) -> list[bool]:
    """Which source frames a hyperframe at this hop uses (the runtime decodes only those)."""
    s = StrideSampler(spec, every)
    return [ORIGINAL_IS_NEEDED(s, i) for i in range(frames)]  # never an injected regression


def decode_ms(
    clip: Path, mask: list[bool], spec: HyperframeSpec, pace: float = 0.0
) -> tuple[float, float]:
    """The capture work alone: grab every frame, retrieve and resize the needed ones into reused
    buffers. ``pace`` > 0 delivers frames at that rate, like a camera. Returns wall and CPU
    (every thread: OpenCV decodes on several) ms per frame."""
    cap = cv2.VideoCapture(str(clip))
    h, w = spec.size
    small = np.zeros((h, w, 3), np.uint8)
    buf, n = None, 0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        if pace and (delay := t0 + n / pace - time.perf_counter()) > 0:
            time.sleep(delay)
        if not cap.grab():
            break
        if mask[n]:
            _, buf = cap.retrieve(buf)
            resize_into(buf, small, spec.interpolation)
        n += 1
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    cap.release()
    assert n == len(mask), f"decoded {n} frames, expected {len(mask)}"
    return dt * 1000 / n, cpu * 1000 / n


def limit_call(backend, inputs: list[np.ndarray]):
    """The fastest way to run the runtime's own engine, with the same compiled model/session:
    OpenVINO, a second request with its input tensors set once and ``infer()`` with no arguments
    (what ``benchmark_app`` times); onnxruntime, ``run_with_iobinding`` on bound buffers."""
    if backend.name == "onnxruntime":
        s = backend.session
        binding = s.io_binding()
        for i, x in zip(s.get_inputs(), inputs, strict=True):
            binding.bind_input(i.name, "cpu", 0, np.uint8, list(x.shape), x.ctypes.data)
        out = np.zeros((inputs[0].shape[0], len(backend.spec.classes)), np.float32)
        name = s.get_outputs()[0].name
        binding.bind_output(name, "cpu", 0, np.float32, list(out.shape), out.ctypes.data)

        def call() -> np.ndarray:  # holds ``out``: ORT writes there by address (freed: a segfault)
            s.run_with_iobinding(binding)
            return out

        return call
    import openvino as ov

    request = backend.compiled.create_infer_request()
    for k, x in enumerate(inputs):
        request.set_input_tensor(k, ov.Tensor(x, shared_memory=True))
    return request.infer


def calls_ms(call, calls: int = 200) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - t0) * 1000 / calls


def calls_stats(call, calls: int = 200) -> tuple[float, float, float]:
    """Per call: the 10th percentile (ms), the mean (ms) and the CPU time of every thread (ms).

    The 10th percentile is the cost of a call that was not preempted, which other work on the
    box barely moves (a mean doubles at load 10 on 2 cores): the step-vs-limit gate uses it."""
    times = np.empty(calls)
    c0, t_start = time.process_time(), time.perf_counter()
    for k in range(calls):
        t0 = time.perf_counter()
        call()
        times[k] = time.perf_counter() - t0
    mean = (time.perf_counter() - t_start) * 1000 / calls
    cpu = (time.process_time() - c0) * 1000 / calls
    return float(np.percentile(times, 10)) * 1000, mean, cpu


def paced_calls_cpu(call, rate: float, seconds: float) -> float:
    """CPU seconds per second of calling ``call`` at ``rate`` per second (sleeping between)."""
    n = max(1, round(rate * seconds))
    c0, t0 = time.process_time(), time.perf_counter()
    for k in range(n):
        if (delay := t0 + k / rate - time.perf_counter()) > 0:
            time.sleep(delay)
        call()
    return (time.process_time() - c0) / (time.perf_counter() - t0)


def make_runtime(clip: Path, model: Path, every: int, fast: bool = True, **kw) -> Runtime:
    cfg = RunConfig(
        cameras=(str(clip),), model=model, every=every, source_opts=SourceOptions(fast=fast), **kw
    )
    return Runtime(cfg, [NullSink()], threading.Event())


def runtime_ms(clip: Path, model: Path, every: int, frames: int, **kw) -> tuple[float, float, int]:
    """edge-hf end to end on the file with --fast (every hyperframe processed): wall and CPU ms
    per frame, and how many frames it decoded."""
    rt = make_runtime(clip, model, every, **kw)
    for _ in range(WARM_CALLS):  # as the limit call is: a first call (OpenVINO: ~20 ms) is not
        rt.backend.infer()  # what a camera that runs for days pays per frame
    t0, c0 = time.perf_counter(), time.process_time()
    assert rt.run() == 0
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert rt.cameras[0].capture.stats.grabbed == frames
    assert rt.cameras[0].capture.stats.dropped == 0
    return dt * 1000 / frames, cpu * 1000 / frames, rt.cameras[0].capture.stats.decoded


def runtime_paced(clip: Path, model: Path, every: int, **kw) -> tuple[float, Runtime]:
    """edge-hf on the file at its own frame rate, like a camera: CPU seconds per second."""
    rt = make_runtime(clip, model, every, fast=False, **kw)
    c0, t0 = time.process_time(), time.perf_counter()
    assert rt.run() == 0
    return (time.process_time() - c0) / (time.perf_counter() - t0), rt
