"""The figures the bench gates, each with a goal and a gate, and the regressions that prove them.

A figure is a ratio (or a size) measured in one run, in interleaved rounds: the median round
deciding (for the end-to-end figures the median of per-round ratios, each round's run against
the parts measured just before it; docs/performance.md). The **goal** is what a healthy build reaches on a quiet box; it is printed, stored in
the benchmark JSON's ``extra_info`` and shown in docs/performance.md. The **gate** fails the run; its margin
lets a healthy build pass on this 2-core VM at load average 3 while the regression it guards
(``INJECT`` below) still fails it.

Injected regressions: ``EDGE_HF_BENCH_INJECT=name[,name]`` (never set by ``.ci/run``) patches
the runtime *in the bench process only* (and in the ``edge-hf run`` subprocess of the RSS test,
through ``python -m bench.inject``), to show each gate can fail:

- ``hyperframe-copy``: a copy of the hyperframe's frame ring for every decoded frame;
- ``frame-copy``: a fresh copy of every decoded full-size frame (what ``cap.read()`` without a
  reused buffer costs);
- ``decode-all``: every frame retrieved and resized, needed or not (at hop 5: see docs/performance.md on
  why no timing gate sees it with OpenCV's FFmpeg reader, and the test that does);
- ``area-resize``: the seed's resize, INTER_AREA from the full frame (~2 ms a 576p frame, against
  0.06 ms for the spec's linear);
- ``frame-float``: every decoded frame converted to float32 and normalised on the CPU before its
  resize (~0.5 ms a 576p frame: a quarter of a frame's cost at hop 1);
- ``float-input``: each hyperframe converted to float32 and normalised on the CPU (the seed's
  preprocessing, which edge-hf leaves to the model's first layer);
- ``serial``: one lock around the decoder and the engine, so capture and inference never overlap;
- ``dict-call``: the engine called with a feed dict, returning fresh outputs (the old "raw call");
- ``leak``: a copy of each hyperframe kept forever;
- ``poll``: the inference loop polls every 0.2 ms instead of sleeping until a hyperframe is ready.
- ``int8-no-lpt``: the INT8 IR compiled without OpenVINO's low-precision transformations (its
  FakeQuantize ops then run in FP32);
- ``http-poll``: the HTTP sink's server polls every 1 ms instead of sleeping until a connection comes.
- ``train-contiguous``: the trainer's network in the default memory layout (workstation: the
  trainer's step, not the runtime's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

SEED_LIKE = "frame-copy,area-resize,float-input,dict-call,decode-all"
# figure -> (goal, gate, the injected regression meant to fail it (docs/performance.md: which ones did), what)
GATES: dict[str, tuple[float, float, str, str]] = {
    "e2e_hop1": (1.15, 1.6, "area-resize", "end to end / (decode + limit), hop 1, median round"),
    "e2e_hop5": (1.15, 1.9, "area-resize", "end to end / (decode + limit/5), hop 5, median round"),
    "e2e_cpu_hop1": (1.15, 1.5, "frame-float", "the same in CPU time, hop 1"),
    "e2e_cpu_hop5": (1.15, 1.5, "frame-float", "the same in CPU time, hop 5"),
    "decoded_hop5": (1.0, 1.0, "decode-all", "frames decoded / frames needed, hop 5"),
    "step": (1.05, 1.08, "dict-call", "runtime's inference step / limit call (p10 of calls)"),
    "naive_hop1": (5.0, 2.5, SEED_LIKE, "naive torch loop CPU / edge-hf CPU per frame, hop 1"),
    "naive_hop5": (5.0, 2.5, SEED_LIKE, "naive torch loop CPU / edge-hf CPU per frame, hop 5"),
    "bytes_per_frame": (0.0, 64.0, "leak", "heap growth per frame in steady state (B)"),
    "transient_bytes": (32_000, 64_000, "hyperframe-copy", "heap high-water above steady (B)"),
    "rss_mb": (150.0, 300.0, "leak", "peak RSS of `edge-hf run`, one camera, OpenVINO (MB)"),
    "int8_b1": (1.0, 1.15, "int8-no-lpt", "INT8 / FP32 latency (p10), batch 1 (OpenVINO)"),
    "int8_b8": (1.0, 1.10, "int8-no-lpt", "INT8 / FP32 latency (p10), batch 8 (OpenVINO)"),
    "paced_cpu": (1.2, 1.5, "poll", "paced CPU / (decode paced + limit paced) CPU"),
    "http_idle": (0.01, 0.03, "http-poll", "idle --http CPU / limit call CPU at 25/s"),
    "train_step": (0.8, 0.9, "train-contiguous", "trainer's step / default-layout step (time)"),
}

HIGHER_IS_BETTER = {"naive_hop1", "naive_hop5"}

INJECT = frozenset(filter(None, os.environ.get("EDGE_HF_BENCH_INJECT", "").split(",")))
KNOWN = {
    "hyperframe-copy",
    "frame-copy",
    "decode-all",
    "float-input",
    "serial",
    "dict-call",
    "leak",
    "poll",
    "int8-no-lpt",
    "http-poll",
    "area-resize",
    "frame-float",
    "train-contiguous",
}
if INJECT - KNOWN:
    raise SystemExit(f"EDGE_HF_BENCH_INJECT: unknown {sorted(INJECT - KNOWN)}; one of {KNOWN}")


@dataclass
class Verdicts:
    """Figures of one test: printed, put in ``extra_info``, and checked against their gates."""

    prefix: str = ""
    values: dict[str, float] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    def check(self, extra: dict, name: str, value: float) -> None:
        goal, gate, _, what = GATES[name]
        key = f"{self.prefix}{name}"
        higher = name in HIGHER_IS_BETTER
        met, ok = (value >= goal, value >= gate) if higher else (value <= goal, value <= gate)
        cmp = ">=" if higher else "<="
        extra[key] = {"value": round(value, 4), "goal": goal, "gate": gate, "goal_met": met}
        self.values[key] = value
        line = (
            f"{key:>26}: {value:10.3f}  goal {cmp} {goal:<8g} {'met' if met else 'MISSED':6}"
            f"  gate {cmp} {gate:<8g} {'ok' if ok else 'FAILED'}  ({what})"
        )
        print(line)
        RESULTS.append((key, value, goal, gate, met, ok, what))
        if not ok:
            self.failed.append(line.strip())

    def assert_all(self) -> None:
        assert not self.failed, "gates failed:\n" + "\n".join(self.failed)


# Every checked figure of the session, for the summary table (bench/conftest.py).
RESULTS: list[tuple[str, float, float, float, bool, bool, str]] = []


def median_ratio(num: list[float], den: list[float]) -> float:
    """The median of per-round ratios: each round's parts were measured seconds apart."""
    return float(np.median([a / b for a, b in zip(num, den, strict=True)]))
