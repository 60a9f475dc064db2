"""Motion gating (edge_hf/motion.py) through the runtime, with the embedded demo model on real
video files: a still scene costs a fraction of the model calls, and a fall that follows a still
stretch is still alerted within a second."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from edge_hf import synth
from edge_hf.motion import MotionOptions
from edge_hf.runtime import DEMO_MODEL, RunConfig, Runtime
from edge_hf.sources import SourceOptions

FPS = 25
SIZE = (180, 320)  # (H, W)
STILL_S = 6


class Events:
    def __init__(self) -> None:
        self.events = []

    def start(self, run) -> None:
        pass

    def emit(self, event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass


def _write(path: Path, frames) -> Path:
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), FPS, SIZE[::-1])
    for f in frames:
        out.write(f)
    out.release()
    return path


def _noisy(frame: np.ndarray, n: int, seed: int = 0):
    """``frame`` ``n`` times with fresh sensor noise (sigma 2 grey levels) on each."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        noise = rng.normal(0, 2, frame.shape)
        yield np.clip(frame + noise, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def still_then_fall(tmp_path_factory) -> tuple[Path, int]:
    """STILL_S seconds of the standing figure, then the synthetic fall; and the frame the
    fall starts at (its 'fall' phase, from the scene's own labels)."""
    scene = synth.make_scene("fall", seed=0, size=SIZE)
    (onset,) = [a for a, _, label in scene.phases() if label == "fall"]
    first = np.zeros((*SIZE, 3), np.uint8)
    scene.render(0, first)
    frames = [*_noisy(first, STILL_S * FPS)]
    for i in range(scene.length):
        f = np.zeros_like(first)
        scene.render(i, f)
        frames.append(f)
    path = tmp_path_factory.mktemp("motion") / "still_then_fall.avi"
    return _write(path, frames), STILL_S * FPS + onset


def _run(clip: Path, motion: bool, every: int = 1) -> tuple[Runtime, Events]:
    sink = Events()
    cfg = RunConfig(
        cameras=(f"cam={clip}",),
        model=DEMO_MODEL,
        every=every,
        source_opts=SourceOptions(fast=True),
        motion=MotionOptions(enabled=motion),
    )
    rt = Runtime(cfg, [sink], threading.Event())
    assert rt.run() == 0
    return rt, sink


@pytest.mark.parametrize("every", [1, 5])
def test_a_still_scene_cuts_model_calls_by_80_percent(tmp_path: Path, every: int):
    first = np.zeros((*SIZE, 3), np.uint8)
    synth.make_scene("hold", seed=3, size=SIZE).render(0, first)
    clip = _write(tmp_path / "still.avi", _noisy(first, 10 * FPS, seed=1))
    on, _ = _run(clip, motion=True, every=every)
    off, _ = _run(clip, motion=False, every=every)
    assert off.latency.count == off.cameras[0].stats.published  # every window, ungated
    assert on.latency.count <= 0.2 * off.latency.count
    c = on.counters().cameras[0]
    assert dict(c.skipped)["still"] == off.latency.count - on.latency.count
    assert on.latency.count >= 10 * 1 / 2  # still scored every max_skip (2 s) of video


def test_a_fall_after_a_still_stretch_is_alerted_within_a_second(still_then_fall):
    clip, onset = still_then_fall
    rt, sink = _run(clip, motion=True)
    starts = [e for e in sink.events if e.kind == "start" and e.label == "fall"]
    assert starts, "the fall was not alerted with motion gating on"
    assert onset <= starts[0].frame <= onset + FPS  # within 1 s of video of its start
    still = dict(rt.counters().cameras[0].skipped)["still"]
    assert still >= 0.8 * STILL_S * FPS  # the still stretch was skipped
