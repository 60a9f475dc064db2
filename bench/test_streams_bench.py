"""Streams per box, the short sweep (bench/streams.py): 2 paced 720p25 H.264 cameras at hop 5,
decode only against edge-hf with and without motion gating, 4 s each (about 20 s with the clips;
``-m "not sweep"`` leaves it out). The full sweep, N up to 32, is ``python -m bench.streams``
(docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.streams import LATENCY_OK, sweep, table, write_clips
from tests.live import have_ffmpeg

N, SECONDS = 2, 8.0  # the window (its last two thirds) holds one fall of the 7 s loop


@pytest.mark.sweep
@pytest.mark.skipif(not have_ffmpeg(), reason="ffmpeg writes the H.264 clips")
def test_streams_short_sweep(benchmark, extra, tmp_path: Path):
    clips = write_clips(tmp_path)
    rows = benchmark.pedantic(lambda: sweep([N], SECONDS, clips), rounds=1, iterations=1)
    print("\n" + table(rows))
    by = {r.side: r for r in rows}
    for r in rows:
        extra[f"{r.side}.n{N}"] = {
            "kept": round(r.kept, 4),
            "growth": round(r.growth, 3),
            "dropped": r.dropped,
            "latency_s": r.latency,
            "cpu_cores": round(r.cpu, 3),
        }
    extra["edge_over_decode_cpu"] = round(by["edge-hf"].cpu / by["decode"].cpu, 3)
    # what the short sweep can say: at N=2 every side keeps up and the fall is alerted in time
    assert all(r.ok for r in rows), table(rows)
    assert by["edge-hf"].latency is not None and by["edge-hf"].latency <= LATENCY_OK
