"""Shared bench fixtures: the clip, the machine description every record carries, and the
summary table of every gated figure printed (and written to bench/results/) at the end."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import cv2
import pytest

from bench import inject
from bench.gates import HIGHER_IS_BETTER, INJECT, RESULTS
from edge_hf import synth
from export.card import cpu_name
from tests.live import write_h264_clip

FPS = 25
FRAMES = 250  # 10 s at 25 fps
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def pytest_configure(config: pytest.Config) -> None:
    inject.apply()  # no-op unless EDGE_HF_BENCH_INJECT names regressions (bench/gates.py)


@pytest.fixture(scope="session")
def clip_576p(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 s of the demo scene as a 1024x576 H.264 file at 25 fps, like a camera's substream."""
    d = tmp_path_factory.mktemp("bench")
    story = d / "story.avi"
    synth.write_clip(
        story, synth.make_scene("demo", seed=0, size=(576, 1024)), FRAMES, fourcc="MJPG"
    )
    return write_h264_clip(
        d / "story_576p.mp4", seconds=FRAMES / FPS, size=(1024, 576), source=story
    )


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def machine() -> dict:
    """What a figure depends on besides the code: engines, CPU, threads, load."""
    return {
        "versions": {
            d: _version(d)
            for d in ("openvino", "onnxruntime", "opencv-python-headless", "numpy", "torch")
        },
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "opencv_threads": cv2.getNumThreads(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "inject": sorted(INJECT),
    }


@pytest.fixture
def extra(benchmark) -> dict:
    """``benchmark.extra_info`` with the machine filled in (load average at the test's start)."""
    benchmark.extra_info.update(machine())
    return benchmark.extra_info


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not RESULTS:
        return
    rows = ["| figure | measured | goal | gate | |", "|---|---|---|---|---|"]
    for key, value, goal, gate, met, ok, what in RESULTS:
        cmp = ">=" if key.rsplit(".", 1)[-1] in HIGHER_IS_BETTER else "<="
        verdict = "goal met" if met else ("gate ok, goal missed" if ok else "**FAILED**")
        rows.append(
            f"| {what} [`{key}`] | {value:.3f} | {cmp} {goal:g} | {cmp} {gate:g} | {verdict} |"
        )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = "\n".join(rows) + f"\n\nload average at the end: {load}; inject: {sorted(INJECT)}\n"
    terminalreporter.write_sep("=", "edge-hf bench figures")
    terminalreporter.write_line(text)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "figures.md").write_text(text)
