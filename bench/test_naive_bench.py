"""edge-hf against what a user would write by hand: the seed article's own pipeline.

Read every frame, ``INTER_AREA`` resize, RGB float tensor normalised per frame, ``torch.cat`` of
the last T frames per hyperframe, a torch eager timm model (same architecture, same input size
and frame count as the demo model, random weights: the cost is the same), on one thread like
edge-hf's engine (torch's default two threads fight the decoder for the same two cores, and on a
loaded box their spinning makes the naive loop 10-50x slower still, which would gate nothing).
Workstation extra: skipped where torch or timm is absent (a device install).
"""

from __future__ import annotations

import collections
import statistics
import time
from pathlib import Path

import cv2
import pytest

from bench.conftest import FRAMES
from bench.gates import Verdicts, median_ratio
from bench.measure import make_runtime, runtime_ms
from edge_hf.runtime import DEMO_MODEL

torch = pytest.importorskip("torch", reason="the naive loop needs torch (workstation extra)")
timm = pytest.importorskip("timm", reason="the naive loop needs timm (workstation extra)")

ROUNDS = 5
NAIVE_FRAMES = 100  # the naive loop is slow: its first 100 frames (4 s of video) give its rate


def naive_ms(clip: Path, model, spec, every: int) -> tuple[float, float]:
    """The seed's pipeline, as a user would write it: wall and CPU ms per source frame."""
    h, w = spec.size
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    window = collections.deque(maxlen=spec.frames)  # stride 1 (the demo model's)
    cap = cv2.VideoCapture(str(clip))
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(NAIVE_FRAMES):
        ok, frame = cap.read()
        assert ok
        small = cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA)
        rgb = cv2.cvtColor(small, cv2.COLOR_BGR2RGB)
        x = torch.from_numpy(rgb).permute(2, 0, 1).float().div(255.0)
        window.append((x - mean) / std)
        if len(window) == spec.frames and (i - (spec.frames - 1)) % every == 0:
            hyperframe = torch.cat(list(window), dim=0).unsqueeze(0)
            with torch.no_grad():
                model(hyperframe).softmax(-1)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    cap.release()
    return dt * 1000 / NAIVE_FRAMES, cpu * 1000 / NAIVE_FRAMES


def test_edge_hf_against_the_naive_loop(benchmark, extra, clip_576p: Path):
    spec = make_runtime(clip_576p, DEMO_MODEL, 1).spec
    assert spec.stride == 1, "the naive loop keeps the last T frames (stride 1)"
    model = timm.create_model(
        spec.arch or "mobilenetv3_small_100",
        pretrained=False,
        in_chans=3 * spec.frames,
        num_classes=len(spec.classes),
    ).eval()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        naive_ms(clip_576p, model, spec, 1)  # warm-up (torch's first calls)
        rows = interleaved(clip_576p, model, spec, benchmark)
    finally:
        torch.set_num_threads(threads)
    wall = {k: [w for w, _ in v] for k, v in rows.items()}
    cpu = {k: [c for _, c in v] for k, v in rows.items()}
    extra.update({f"{k}_ms": round(statistics.median(v), 4) for k, v in wall.items()})
    extra.update({f"{k}_cpu_ms": round(statistics.median(v), 4) for k, v in cpu.items()})
    extra["torch_threads"] = 1
    extra["model"] = DEMO_MODEL.name
    print("\n" + ", ".join(f"{k} {v}" for k, v in extra.items() if k.endswith("ms")))
    # CPU time per frame: what limits how many cameras a box can run, and what the box's other
    # work barely moves (wall-clock ratios are in extra_info too).
    extra["naive_wall_hop1"] = round(median_ratio(wall["naive1"], wall["edge1"]), 3)
    extra["naive_wall_hop5"] = round(median_ratio(wall["naive5"], wall["edge5"]), 3)
    v = Verdicts(prefix=f"{DEMO_MODEL.name}.")
    v.check(extra, "naive_hop1", median_ratio(cpu["naive1"], cpu["edge1"]))
    v.check(extra, "naive_hop5", median_ratio(cpu["naive5"], cpu["edge5"]))
    v.assert_all()


def interleaved(clip: Path, model, spec, benchmark) -> dict[str, list[tuple[float, float]]]:
    rows: dict[str, list[tuple[float, float]]] = {
        k: [] for k in ("naive1", "naive5", "edge1", "edge5")
    }

    def one_round() -> None:
        rows["naive1"].append(naive_ms(clip, model, spec, 1))
        rows["edge1"].append(runtime_ms(clip, DEMO_MODEL, 1, FRAMES)[:2])
        rows["naive5"].append(naive_ms(clip, model, spec, 5))
        rows["edge5"].append(runtime_ms(clip, DEMO_MODEL, 5, FRAMES)[:2])

    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    return rows
