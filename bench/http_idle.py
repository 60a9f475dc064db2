"""What ``--http`` costs while nobody reads it: the process's CPU time over an idle stretch, with
the HTTP sink serving and without it (same process, interleaved rounds).

    .venv/bin/python -m bench.http_idle [SECONDS_PER_ROUND]

Nothing is computed until a request comes; the server thread wakes twice a second to check for
a stop (``serve_forever(poll_interval=0.5)``). Prints CPU microseconds per second of wall time.
"""

from __future__ import annotations

import statistics
import sys
import time

from edge_hf.health import Counters, Health
from edge_hf.sinks import RunInfo
from edge_hf.sinks.http import HttpOptions, HttpSink
from tests.live import free_port

ROUNDS = 5


def cpu_per_second(seconds: float, serving: bool) -> float:
    sink = None
    if serving:
        info = RunInfo(
            ("cam",), ("fall",), lambda: Counters(time.monotonic(), (), 0, 0, 0), Health()
        )
        sink = HttpSink(HttpOptions("127.0.0.1", free_port()))
        sink.start(info)
        time.sleep(0.5)  # the thread is up and polling
    c0, t0 = time.process_time(), time.monotonic()
    time.sleep(seconds)
    used = (time.process_time() - c0) / (time.monotonic() - t0)
    if sink is not None:
        sink.close()
    return used * 1e6


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    on, off = [], []
    for _ in range(ROUNDS):
        off.append(cpu_per_second(seconds, serving=False))
        on.append(cpu_per_second(seconds, serving=True))
    print(
        f"idle CPU, median of {ROUNDS} rounds of {seconds:g} s: "
        f"{statistics.median(on):.0f} us/s with --http, {statistics.median(off):.0f} us/s without"
    )


if __name__ == "__main__":
    main()
