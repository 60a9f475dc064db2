"""INT8 against FP32 on OpenVINO, through the runtime's own backend, at batch 1 and batch 8.

FP32 is the shipped ONNX file read by the OpenVINO backend (the same graph an FP32 IR holds,
converted in memory), INT8 the shipped IR; both with the runtime's default options. Each figure
is the 10th percentile of single calls (the cost of a call no other work preempted).
"""

from __future__ import annotations

import importlib.util
import statistics

import numpy as np
import pytest

from bench import inject
from bench.gates import Verdicts, median_ratio
from bench.measure import DEMO_DIR, calls_stats
from edge_hf.backends import BackendOptions, load_backend
from edge_hf.sampler import StrideSampler

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("openvino") is None, reason="openvino is not installed"
)
ROUNDS = 5
CALLS = {1: 150, 8: 25}


def bound(path, backend: str, batch: int):
    b = load_backend(path, backend, BackendOptions())
    if path.suffix == ".xml":
        inject.int8_backend(b)  # no-op unless EDGE_HF_BENCH_INJECT=int8-no-lpt
    inputs = StrideSampler(b.spec, 1).input_buffers(batch)
    inputs[0][:] = np.random.default_rng(batch).integers(0, 256, inputs[0].shape, np.uint8)
    b.bind(inputs, np.zeros((batch, len(b.spec.classes)), np.float32))
    b.infer()
    return b


def test_int8_against_fp32(benchmark, extra):
    engines = {
        (prec, batch): bound(DEMO_DIR / f, "openvino", batch)
        for prec, f in (("int8", "model-int8.xml"), ("fp32", "model.onnx"))
        for batch in (1, 8)
    }
    rows: dict[tuple[str, int], list[float]] = {k: [] for k in engines}

    def others() -> None:
        for (prec, batch), b in engines.items():
            if (prec, batch) != ("int8", 1):
                rows[prec, batch].append(calls_stats(b.infer, CALLS[batch])[0])

    int8_b1 = engines["int8", 1]
    benchmark.pedantic(
        lambda: rows["int8", 1].append(calls_stats(int8_b1.infer, CALLS[1])[0]),
        setup=others,
        rounds=ROUNDS,
        iterations=1,
    )
    ms = {f"{p}_b{b}_p10_ms": statistics.median(v) for (p, b), v in rows.items()}
    extra.update({k: round(v, 4) for k, v in ms.items()})
    extra["threads"] = int(int8_b1.compiled.get_property("INFERENCE_NUM_THREADS"))
    print("\n" + ", ".join(f"{k} {v:.3f}" for k, v in ms.items()))
    v = Verdicts()
    for batch in (1, 8):
        v.check(extra, f"int8_b{batch}", median_ratio(rows["int8", batch], rows["fp32", batch]))
    v.assert_all()
