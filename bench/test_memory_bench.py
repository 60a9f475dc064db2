"""Memory: heap bytes per frame in steady state (tracemalloc, every thread of the runtime), the
heap's transient high-water, and the peak RSS of ``edge-hf run`` on one camera."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from bench.gates import INJECT, Verdicts
from edge_hf.runtime import DEMO_MODEL, RunConfig, Runtime
from edge_hf.sources import SourceOptions, open_source
from tests.allocation import AllocationProbe

ROOT = Path(__file__).resolve().parent.parent
RSS_CAMERA = "synth://demo?frames=500"  # as measured when issue 9 was filed (153 MB)
# Warm-up until the first mark; steady state over two equal intervals after it. A leak grows the
# heap in both; a one-off (a lazily compiled regex, a cache filling) in one only: the smaller
# interval decides.
MARKS = (60, 150, 240)


@pytest.mark.parametrize("every", [1, 5])
def test_heap_per_frame(benchmark, extra, clip_576p: Path, every: int):
    def run() -> AllocationProbe:
        opts = SourceOptions(fast=True)
        probe = AllocationProbe(open_source(str(clip_576p), opts), MARKS)
        cfg = RunConfig(cameras=("x",), model=DEMO_MODEL, every=every, source_opts=opts)
        rt = Runtime(cfg, [], threading.Event(), sources=[probe])
        tracemalloc.start(1)
        try:
            rt.run()
        finally:
            tracemalloc.stop()
        assert len(probe.snapshots) == len(MARKS), "the probe never reached its last mark"
        return probe

    probe = benchmark.pedantic(run, rounds=1, iterations=1)
    grown = []
    for a, b in itertools.pairwise(probe.snapshots):
        diff = b.compare_to(a, "lineno")
        grown.append(sum(d.size_diff for d in diff))
        print("\n" + "\n".join(str(d) for d in diff[:3]))
    extra["heap_growth_per_interval"] = grown
    v = Verdicts(prefix=f"hop{every}.")
    v.check(extra, "bytes_per_frame", max(0.0, min(grown) / (MARKS[1] - MARKS[0])))
    v.check(extra, "transient_bytes", float(max(0, probe.peak - probe.base)))
    v.assert_all()


# Linux keeps a process's peak RSS across exec, and a child forked from this (large) pytest
# process starts from ours: so a small launcher runs the command and reports its child's peak.
_LAUNCHER = """import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss_mb(argv: list[str]) -> float:
    """Run a command to its end; its peak resident set, from the kernel's own account."""
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[-1]) / 1024  # KiB on Linux


@pytest.mark.skipif(DEMO_MODEL.suffix != ".xml", reason="openvino is not installed")
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux only")
def test_peak_rss_one_camera(benchmark, extra):
    # The CLI as a user runs it; the injected regressions need the bench's wrapper instead.
    entry = ["-m", "bench.inject"] if INJECT else ["-m", "edge_hf"]
    argv = [sys.executable, *entry, "run", "--camera", RSS_CAMERA, "--fast"]
    rss = benchmark.pedantic(peak_rss_mb, args=(argv,), rounds=1, iterations=1)
    extra["command"] = f"edge-hf run --camera '{RSS_CAMERA}' --fast  (OpenVINO INT8 demo)"
    v = Verdicts()
    v.check(extra, "rss_mb", rss)
    v.assert_all()
