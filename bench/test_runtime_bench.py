"""Runtime cost against its parts, measured in one run on a generated 576p H.264 clip.

    make bench        (or: .venv/bin/python -m pytest bench -q)

Every figure is a median over interleaved rounds, so machine noise hits all of them alike, and
the gates are ratios between them, never absolute times:

- end to end at hop h <= 1.15 x (decode + inference / h), decode being OpenCV's grab + retrieve of
  every frame and inference the raw backend call;
- the runtime's inference step (bound buffers) <= 1.10 x a plain call of the same engine on the
  same model (``session.run`` / ``request.infer`` with a feed dict).

Both shipped demo models are measured: ONNX on onnxruntime, the INT8 IR on OpenVINO.
"""

from __future__ import annotations

import importlib.util
import statistics
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import onnxruntime as ort
import pytest

from edge_hf import synth
from edge_hf.runtime import RunConfig, Runtime
from edge_hf.sources import SourceOptions
from tests.live import write_h264_clip

ROUNDS = 7
DEMO_DIR = Path(__file__).resolve().parent.parent / "edge_hf" / "assets" / "demo"
FRAMES = 250  # 10 s at 25 fps


class NullSink:
    def start(self, run) -> None:
        pass

    def emit(self, event) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def clip_576p(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bench")
    story = d / "story.avi"
    synth.write_clip(
        story, synth.make_scene("demo", seed=0, size=(576, 1024)), FRAMES, fourcc="MJPG"
    )
    return write_h264_clip(
        d / "story_576p.mp4", seconds=FRAMES / 25, size=(1024, 576), source=story
    )


def decode_ms(clip: Path) -> float:
    """OpenCV alone: grab + retrieve every frame into a reused buffer."""
    cap = cv2.VideoCapture(str(clip))
    buf, n = None, 0
    t0 = time.perf_counter()
    while cap.grab():
        _, buf = cap.retrieve(buf)
        n += 1
    dt = time.perf_counter() - t0
    cap.release()
    assert n == FRAMES
    return dt * 1000 / n


def raw_call(rt: Runtime, x: np.ndarray):
    """The plain way to call the runtime's own engine: ``session.run`` with a feed dict, or a
    request's ``infer`` with one, each returning fresh outputs."""
    if rt.backend.name == "onnxruntime":
        session: ort.InferenceSession = rt.backend.session
        feed = {session.get_inputs()[0].name: x}
        return lambda: session.run(None, feed)
    request = rt.backend.compiled.create_infer_request()
    return lambda: request.infer({0: x})


def raw_inference_ms(call, calls: int = 300) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - t0) * 1000 / calls


def runtime_ms(clip: Path, every: int, model: Path) -> tuple[float, float]:
    """edge-hf end to end on the file (--fast: every hyperframe processed); returns ms per
    source frame and the runtime's own median inference step."""
    cfg = RunConfig(
        cameras=(str(clip),), model=model, every=every, source_opts=SourceOptions(fast=True)
    )
    rt = Runtime(cfg, [NullSink()], threading.Event())
    t0 = time.perf_counter()
    assert rt.run() == 0
    dt = time.perf_counter() - t0
    assert rt.cameras[0].capture.stats.grabbed == FRAMES
    return dt * 1000 / FRAMES, rt.latency.percentile(50)


def runtime_step_ms(rt: Runtime, calls: int = 300) -> float:
    """The runtime's inference step alone: the backend bound to preallocated buffers."""
    t0 = time.perf_counter()
    for _ in range(calls):
        rt.backend.infer()
    return (time.perf_counter() - t0) * 1000 / calls


MODELS = [
    pytest.param(DEMO_DIR / "model.onnx", id="onnxruntime-fp32"),
    pytest.param(
        DEMO_DIR / "model-int8.xml",
        id="openvino-int8",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("openvino") is None, reason="no openvino"
        ),
    ),
]


@pytest.mark.parametrize("model", MODELS)
def test_runtime_against_its_parts(benchmark, clip_576p: Path, model: Path):
    cfg = RunConfig(cameras=("synth://walk_left?frames=10",), model=model)
    rt = Runtime(cfg, [NullSink()], threading.Event())
    x = np.random.default_rng(0).integers(0, 256, (1, 3, 160, 160, 3), np.uint8)
    rt.inputs[0][:] = x
    raw = raw_call(rt, x)
    raw_inference_ms(raw, 50)  # warm-up
    rows: dict[str, list[float]] = {k: [] for k in ("decode", "raw", "step", "hop1", "hop5")}
    for _ in range(ROUNDS):
        rows["decode"].append(decode_ms(clip_576p))
        rows["raw"].append(raw_inference_ms(raw))
        rows["step"].append(runtime_step_ms(rt))
        rows["hop1"].append(runtime_ms(clip_576p, 1, model)[0])
        rows["hop5"].append(runtime_ms(clip_576p, 5, model)[0])
    m = {k: statistics.median(v) for k, v in rows.items()}
    # pytest-benchmark's own record: the end-to-end run at hop 1
    benchmark.pedantic(runtime_ms, args=(clip_576p, 1, model), rounds=3, iterations=1)
    # Ratios within each round (its parts measured seconds apart), then the median round.
    per_round = {
        "hop1 / (decode + raw)": [
            a / (d + r) for a, d, r in zip(rows["hop1"], rows["decode"], rows["raw"], strict=True)
        ],
        "hop5 / (decode + raw/5)": [
            a / (d + r / 5)
            for a, d, r in zip(rows["hop5"], rows["decode"], rows["raw"], strict=True)
        ],
        "step / raw": [a / r for a, r in zip(rows["step"], rows["raw"], strict=True)],
    }
    gates = {k: statistics.median(v) for k, v in per_round.items()}
    benchmark.extra_info.update({f"{k}_ms": round(v, 4) for k, v in m.items()})
    benchmark.extra_info.update({k: round(v, 3) for k, v in gates.items()})
    print("\n" + "\n".join(f"{k:>24}: {v:.3f} ms" for k, v in m.items()))
    print("\n".join(f"{k:>24}: {v:.3f}" for k, v in gates.items()))
    assert gates["hop1 / (decode + raw)"] <= 1.15
    assert gates["hop5 / (decode + raw/5)"] <= 1.15
    assert gates["step / raw"] <= 1.10
