"""CPU of one camera at its real frame rate: the runtime on a 25 fps file, not ``--fast``.

Against what it cannot avoid, measured paced the same way in the same rounds: decoding that file
at 25 fps (grab every frame, retrieve and resize the needed ones), and the engine's limit call at
the processed rate (25 a second at hop 1). All three are CPU seconds per second of video
(``time.process_time``, every thread of the process), so they hold up under load better than
wall time does.

Where OpenVINO's paced latency went (2.2 ms paced against 0.5 ms in a tight loop at the time of
issue 9): the CPU plugin pinned its threads to cores (ENABLE_CPU_PINNING, on by default on Linux),
so on a box whose cores are busy decoding a pinned thread waits for its core; the LATENCY hint's
second thread spins and then sleeps after every inference, which costs more CPU than the call
itself at 25 calls a second; and ``start_async`` + ``wait`` woke OpenVINO's executor thread for
every call. The backend now runs one unpinned thread and calls ``infer()`` in its own thread;
what remains is the cost of a cold call (caches cleared by 40 ms of other work), which the limit
call pays alike when paced (``paced_p50_ms`` against ``limit_tight_p50_ms`` in extra_info).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from bench.conftest import FPS
from bench.gates import Verdicts, median_ratio
from bench.measure import (
    decode_ms,
    limit_call,
    make_runtime,
    needed_mask,
    paced_calls_cpu,
    runtime_paced,
)
from edge_hf.runtime import DEMO_MODEL
from tests.live import write_h264_clip

ROUNDS = 3
SECONDS = 5  # per paced run: three runs a round, so 3 x (5 + 5 + 3) s in all


@pytest.fixture(scope="module")
def clip_5s(clip_576p: Path) -> Path:
    return write_h264_clip(
        clip_576p.with_name("paced_576p.mp4"), seconds=SECONDS, size=(1024, 576), source=clip_576p
    )


def decode_paced_cpu(clip: Path, mask: list[bool], spec) -> float:
    c0, t0 = time.process_time(), time.perf_counter()
    decode_ms(clip, mask, spec, pace=FPS)
    return (time.process_time() - c0) / (time.perf_counter() - t0)


def test_paced_camera_cpu(benchmark, extra, clip_5s: Path):
    probe = make_runtime(clip_5s, DEMO_MODEL, 1)  # never run: lends its engine and buffers
    limit, spec = limit_call(probe.backend, probe.inputs), probe.spec
    mask = needed_mask(spec, 1, SECONDS * FPS)
    rows: dict[str, list[float]] = {k: [] for k in ("runtime", "decode", "limit")}
    p50: list[float] = []

    def parts() -> None:
        rows["decode"].append(decode_paced_cpu(clip_5s, mask, spec))
        rows["limit"].append(paced_calls_cpu(limit, FPS, 3.0))

    def run() -> None:
        cpu, rt = runtime_paced(clip_5s, DEMO_MODEL, 1)
        rows["runtime"].append(cpu)
        p50.append(rt.latency.percentile(50))

    benchmark.pedantic(run, setup=parts, rounds=ROUNDS, iterations=1)
    tight = statistics.median(timed(limit) for _ in range(200))
    med = {k: statistics.median(v) for k, v in rows.items()}
    extra.update({f"{k}_cpu_per_s": round(v, 4) for k, v in med.items()})
    extra["paced_p50_ms"] = round(statistics.median(p50), 3)
    extra["limit_tight_p50_ms"] = round(tight, 3)
    extra["model"] = DEMO_MODEL.name
    print(
        f"\npaced CPU (cores): runtime {med['runtime']:.3f}, decode {med['decode']:.3f}, "
        f"limit at {FPS}/s {med['limit']:.3f}; inference p50 paced "
        f"{extra['paced_p50_ms']} ms, tight {tight:.3f} ms"
    )
    v = Verdicts(prefix=f"{DEMO_MODEL.name}.")
    sums = [d + lim for d, lim in zip(rows["decode"], rows["limit"], strict=True)]
    v.check(extra, "paced_cpu", median_ratio(rows["runtime"], sums))
    v.assert_all()


def timed(call) -> float:
    t0 = time.perf_counter()
    call()
    return (time.perf_counter() - t0) * 1000
