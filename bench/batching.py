"""Batch-N in one call against several requests in flight, per engine, with the demo model.

``python -m bench.batching [--seconds S]`` prints, for OpenVINO (the shipped INT8 IR) and
onnxruntime (the shipped ONNX), hyperframes per second and CPU milliseconds per hyperframe:

- ``batch N``: the runtime's own backend, one call on N rows (``infer(n)``), one thread;
- ``async R``: OpenVINO's AsyncInferQueue with R requests (THROUGHPUT hint, streams as OpenVINO
  picks for R requests), each at batch 1;
- ``threads R``: onnxruntime, R Python threads each running its own batch-1 binding on one shared
  session (onnxruntime's way of having requests in flight).

CPU per hyperframe is the figure that counts on a small box, where the cores left over decode
video. Each row runs for ``--seconds`` (default 1) after a short warm-up; about 12 s in all.
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import numpy as np

from edge_hf.backends import BackendOptions, load_backend
from edge_hf.runtime import DEMO_MODEL
from edge_hf.sampler import input_buffers

ONNX = DEMO_MODEL.parent / "model.onnx"
IR = DEMO_MODEL.parent / "model-int8.xml"


def _timed(step, per_call: int, seconds: float) -> tuple[float, float]:
    """(hyperframes/s, CPU ms per hyperframe) of calling ``step`` for ``seconds``."""
    for _ in range(3):
        step()
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        step()
        n += per_call
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return n / wall, cpu * 1000 / n


def batch_rows(path: Path, seconds: float) -> list[tuple[str, float, float]]:
    b = load_backend(path, "auto", BackendOptions())
    rng = np.random.default_rng(0)
    inputs = input_buffers(b.spec, 8)
    for x in inputs:
        x[:] = rng.integers(0, 256, x.shape, np.uint8)
    logits = np.zeros((8, len(b.spec.classes)), np.float32)
    b.bind(inputs, logits)
    return [(f"batch {n}", *_timed(lambda n=n: b.infer(n), n, seconds)) for n in (1, 4, 8)]


def ov_async_rows(seconds: float) -> list[tuple[str, float, float]]:
    import openvino as ov

    b = load_backend(IR, "openvino")
    core = ov.Core()
    shape = b.spec.input_shape(0, 1)
    x = np.random.default_rng(0).integers(0, 256, shape, np.uint8)
    rows = []
    for r in (2, 4):
        config = {"PERFORMANCE_HINT": "THROUGHPUT", "PERFORMANCE_HINT_NUM_REQUESTS": r}
        config["INFERENCE_PRECISION_HINT"] = "f32"
        compiled = core.compile_model(str(IR), "CPU", config)
        queue = ov.AsyncInferQueue(compiled, r)

        def step(queue=queue, r=r) -> None:
            for _ in range(r):
                queue.start_async({0: x})
            queue.wait_all()

        streams = compiled.get_property("NUM_STREAMS")
        rows.append((f"async {r} ({streams} streams)", *_timed(step, r, seconds)))
    return rows


def ort_thread_rows(seconds: float) -> list[tuple[str, float, float]]:
    """R threads, each calling the shared session in a loop for ``seconds`` (no thread is
    started per call: that would time Python, not the engine)."""
    b = load_backend(ONNX, "onnxruntime")
    name = b.session.get_inputs()[0].name
    rows = []
    for r in (2, 4):
        xs = [
            np.random.default_rng(k).integers(0, 256, b.spec.input_shape(0, 1), np.uint8)
            for k in range(r)
        ]
        counts = [0] * r
        t0 = time.perf_counter()
        deadline = t0 + seconds

        def loop(k: int, xs=xs, counts=counts, deadline=deadline) -> None:
            feed = {name: xs[k]}
            while time.perf_counter() < deadline:
                b.session.run(None, feed)
                counts[k] += 1

        b.session.run(None, {name: xs[0]})  # warm-up
        c0 = time.process_time()
        threads = [threading.Thread(target=loop, args=(k,)) for k in range(r)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall, cpu, n = time.perf_counter() - t0, time.process_time() - c0, sum(counts)
        rows.append((f"threads {r}", n / wall, cpu * 1000 / n))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0)
    seconds = ap.parse_args().seconds
    table = [("openvino", *row) for row in batch_rows(IR, seconds) + ov_async_rows(seconds)]
    table += [("onnxruntime", *row) for row in batch_rows(ONNX, seconds)]
    table += [("onnxruntime", *row) for row in ort_thread_rows(seconds)]
    print(f"{'engine':<12} {'how':<22} {'hyperframes/s':>14} {'CPU ms/hyperframe':>18}")
    for engine, how, rate, cpu in table:
        print(f"{engine:<12} {how:<22} {rate:>14.0f} {cpu:>18.3f}")


if __name__ == "__main__":
    main()
