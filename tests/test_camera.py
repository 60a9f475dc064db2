"""One camera of a run (edge_hf/camera.py): its counters snapshot, and re-timing when its source
(re)opens at another frame rate than assumed."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np

from edge_hf.alerts import AlertPolicy
from edge_hf.camera import Camera, CameraPlan
from edge_hf.capture import CapturePolicy
from edge_hf.health import Heartbeat
from edge_hf.motion import MotionOptions
from edge_hf.sources import SourceOptions
from edge_hf.sources.file import FileSource
from tests.motion_model import MOTION_SPEC


def _clip(path: Path, fps: float, frames: int) -> Path:
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (64, 48))
    frame = np.zeros((48, 64, 3), np.uint8)
    for i in range(frames):
        frame[:] = i % 256
        out.write(frame)
    out.release()
    return path


def _camera(
    source, hz: float | None, stop: threading.Event, capture: CapturePolicy | None = None
) -> Camera:
    plan = CameraPlan(
        every=1,
        hz=hz,
        policy=AlertPolicy((("fall", 0.8),), cooldown=4.0),
        motion=MotionOptions(),
        capture=capture or CapturePolicy(),
        block=True,
    )
    return Camera(source, MOTION_SPEC, plan, threading.Condition(), stop, Heartbeat("c"))


def test_a_camera_opened_late_is_retimed_to_its_real_fps(tmp_path: Path):
    """Not opened before the capture starts (as a camera that fails its first open): the hop
    for --hz 5 and the cooldown's fps start from the 25 fps default and follow the source's
    10 fps once it opens."""
    clip = _clip(tmp_path / "ten.avi", 10.0, 30)
    stop = threading.Event()
    cam = _camera(FileSource(str(clip), "ten", SourceOptions(fast=True)), 5.0, stop)
    assert (cam.sampler.every, cam.logic.fps) == (5, 25.0)
    cam.capture.start()
    while not cam.capture.done.wait(0.05):
        with cam.mailbox.cond:  # play the inference side: take what is put
            cam.mailbox.fresh = False
            cam.mailbox.cond.notify_all()
    cam.capture.join(5)
    assert (cam.sampler.every, cam.logic.fps) == (2, 10.0)
    c = cam.counters()
    assert c.name == "ten" and c.grabbed == 30
    assert dict(c.skipped) == {"still": 0, "stale": 0, "busy": 0}


def test_a_fast_file_waiting_for_a_slow_model_is_not_a_stall(tmp_path: Path):
    """--fast: the capture waits for inference to take each hyperframe. A model slower than
    the stall timeout (a loaded box, a big model) keeps it waiting; that is not the file
    stalling, and every frame must still be read."""
    clip = _clip(tmp_path / "clip.avi", 25.0, 12)
    stop = threading.Event()
    policy = CapturePolicy(stall_timeout=0.2)
    cam = _camera(FileSource(str(clip), "clip", SourceOptions(fast=True)), None, stop, policy)
    cam.capture.start()
    taken = 0
    while not cam.capture.done.wait(0.3):  # each take comes later than the stall timeout
        with cam.mailbox.cond:
            taken += cam.mailbox.fresh
            cam.mailbox.fresh = False
            cam.mailbox.cond.notify_all()
    cam.capture.join(5)
    with cam.mailbox.cond:
        taken += cam.mailbox.fresh  # the last one, put as the file ended
    st = cam.capture.stats
    assert cam.capture.error is None and st.failures == 0
    assert st.grabbed == 12 and st.published == taken > 1 and st.dropped == 0


def test_a_camera_far_from_the_models_frame_rate_is_told_once(tmp_path: Path):
    """A model trained on 25 fps video: a 10 fps camera is said once, with the fix; 22 fps
    (within 1.25 times) is not. A real ``edge-hf run``."""
    from dataclasses import replace

    from tests.conftest import run_cli, save_model

    model = save_model(tmp_path / "m.onnx", replace(MOTION_SPEC, fps=25.0))
    said = "fps, but the model was trained on 25 fps video"
    for fps, lines in ((10, 1), (22, 0)):
        camera = f"c=synth://fall?fps={fps}&frames=40"
        r = run_cli("run", "--model", str(model), "--camera", camera, "--fast")
        assert r.returncode == 0, r.stderr
        assert r.stderr.count(said) == lines, r.stderr
        if lines:
            assert f"camera c: 10 {said}: it sees every motion 2.5 times faster" in r.stderr
