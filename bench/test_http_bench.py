"""What ``--http`` costs while nobody reads it: the process's CPU over an idle stretch with the
HTTP sink serving, minus the same stretch without it, against the cheapest work a camera always
does (the engine's limit call at 25 a second, paced), all in the same interleaved rounds.

Nothing is computed until a request comes; the server's threads sleep until a connection comes
(``select`` without a timeout, workers on a queue) or it is closed. The regression this guards
is a server that polls (``EDGE_HF_BENCH_INJECT=http-poll``: every 1 ms), or any timer that
renders pages, metrics or frames for nobody.
"""

from __future__ import annotations

import statistics
import time

from bench.conftest import FPS
from bench.gates import Verdicts, median_ratio
from bench.measure import limit_call, make_runtime, paced_calls_cpu
from edge_hf.health import Counters, Health
from edge_hf.runtime import DEMO_MODEL
from edge_hf.sinks import RunInfo
from edge_hf.sinks.http import HttpOptions, HttpSink
from tests.live import free_port

ROUNDS = 3
SECONDS = 1.5  # per idle stretch and per paced stretch: 3 x 3 x 1.5 s in all


def idle_cpu_per_s(serving: bool) -> float:
    """CPU seconds per second of this process while its main thread sleeps, with an idle HTTP
    sink (started before, closed after the stretch) or without one."""
    sink = None
    if serving:
        info = RunInfo(
            ("cam",), ("fall",), lambda: Counters(time.monotonic(), (), 0, 0, 0), Health()
        )
        sink = HttpSink(HttpOptions("127.0.0.1", free_port()))
        sink.start(info)
        time.sleep(0.2)  # its thread is up and serving
    c0, t0 = time.process_time(), time.perf_counter()
    time.sleep(SECONDS)
    used = (time.process_time() - c0) / (time.perf_counter() - t0)
    if sink is not None:
        sink.close()
    return used


def test_an_idle_http_server_costs_nothing_measurable(benchmark, extra, clip_576p):
    probe = make_runtime(clip_576p, DEMO_MODEL, 1)  # never run: lends its engine and buffers
    limit = limit_call(probe.backend, probe.inputs)
    rows: dict[str, list[float]] = {k: [] for k in ("off", "on", "limit")}

    def parts() -> None:
        rows["off"].append(idle_cpu_per_s(serving=False))
        rows["limit"].append(paced_calls_cpu(limit, FPS, SECONDS))

    benchmark.pedantic(
        lambda: rows["on"].append(idle_cpu_per_s(serving=True)),
        setup=parts,
        rounds=ROUNDS,
        iterations=1,
    )
    med = {k: statistics.median(v) for k, v in rows.items()}
    extra.update({f"{k}_cpu_us_per_s": round(v * 1e6, 1) for k, v in med.items()})
    extra["model"] = DEMO_MODEL.name
    print(
        f"\nidle CPU: {med['on'] * 1e6:.0f} us/s serving, {med['off'] * 1e6:.0f} us/s without; "
        f"limit call at {FPS}/s: {med['limit'] * 1e6:.0f} us/s"
    )
    v = Verdicts()
    extra_cpu = [on - off for on, off in zip(rows["on"], rows["off"], strict=True)]
    v.check(extra, "http_idle", median_ratio(extra_cpu, rows["limit"]))
    v.assert_all()
