"""The capture thread against real live sources on 127.0.0.1: a camera that drops and returns,
one that freezes (stall), one that is not there yet. Served by ffmpeg (tests/live)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from edge_hf.capture import Capture, CapturePolicy, Mailbox
from edge_hf.sampler import StrideSampler
from edge_hf.sources import SourceOptions, open_source
from tests.live import (
    RTSP_CAPTURE_OPTIONS,
    HttpTsServer,
    RtspServer,
    free_port,
    have_ffmpeg,
    have_rtsp_server,
    wait_until,
    write_h264_clip,
)
from tests.motion_model import MOTION_SPEC

pytestmark = pytest.mark.skipif(
    not have_ffmpeg(), reason="ffmpeg is needed to serve live test streams"
)

FAST = CapturePolicy(stall_timeout=1.0, backoff_min=0.2, backoff_max=0.8)


@pytest.fixture(scope="module")
def h264(tmp_path_factory) -> Path:
    return write_h264_clip(tmp_path_factory.mktemp("live") / "cam.mp4", seconds=2, size=(320, 180))


@pytest.fixture(autouse=True)
def quiet_and_udp(monkeypatch):
    monkeypatch.setenv("OPENCV_FFMPEG_LOGLEVEL", "-8")
    # The test RTSP server speaks RTP over UDP only; real cameras are read over TCP (default).
    monkeypatch.setenv("OPENCV_FFMPEG_CAPTURE_OPTIONS", RTSP_CAPTURE_OPTIONS)


class Running:
    """A Capture thread on a real source, stopped and joined on exit."""

    def __init__(self, url: str, policy: CapturePolicy = FAST, every: int = 1) -> None:
        source = open_source(
            url, SourceOptions(open_timeout=2.0, read_timeout=policy.stall_timeout)
        )
        sampler = StrideSampler(MOTION_SPEC, every)
        self.stop = threading.Event()
        self.capture = Capture(source, Mailbox(sampler, threading.Condition()), policy, self.stop)
        self.stats = self.capture.stats

    def __enter__(self) -> Running:
        self.capture.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.capture.join(10)
        assert not self.capture.is_alive()

    def frames_flow(self, more: int = 10, timeout: float = 15.0) -> bool:
        start = self.stats.grabbed
        return wait_until(lambda: self.stats.grabbed >= start + more, timeout)


def test_http_camera_that_drops_and_returns_is_reconnected(h264: Path, caplog):
    caplog.set_level(logging.WARNING, "edge_hf.capture")
    with HttpTsServer(h264) as cam, Running(cam.url) as run:
        assert run.frames_flow()
        published = run.stats.published
        assert published > 0
        cam.stop()
        assert wait_until(lambda: run.stats.failures >= 1, 10)
        cam.start()
        assert run.frames_flow(), caplog.text
        assert run.stats.reconnects >= 1 and run.stats.published > published
    assert "stream lost; reconnecting" in caplog.text


def test_frozen_http_camera_is_detected_and_reopened(h264: Path, caplog):
    """The connection stays open but no bytes arrive: the read timeout ends the wait."""
    caplog.set_level(logging.WARNING, "edge_hf.capture")
    with HttpTsServer(h264) as cam, Running(cam.url) as run:
        assert run.frames_flow()
        cam.hang()
        assert wait_until(lambda: run.stats.failures >= 1, 10), caplog.text
        cam.start()
        assert run.frames_flow(), caplog.text


@pytest.mark.skipif(not have_rtsp_server(), reason="rtsp-server-perl is needed")
def test_rtsp_stall_is_detected_and_the_stream_recovers(h264: Path, caplog):
    """Over RTSP/UDP a stopped feeder is a true stall: OpenCV keeps returning the last frame
    after each read timeout, and only the stall check notices."""
    caplog.set_level(logging.WARNING, "edge_hf.capture")
    with RtspServer(h264) as cam, Running(cam.url) as run:
        assert run.frames_flow(timeout=20)
        cam.stop()
        assert wait_until(lambda: run.stats.failures >= 1, 15), caplog.text
        cam.start()
        assert run.frames_flow(timeout=25), caplog.text
    assert "stall" in caplog.text or "stream lost" in caplog.text


def test_camera_not_there_yet_is_retried_with_backoff(h264: Path, caplog):
    caplog.set_level(logging.WARNING, "edge_hf.capture")
    port = free_port()
    with Running(f"http://127.0.0.1:{port}/cam.ts") as run:
        assert wait_until(lambda: run.stats.failures >= 3, 10)
        assert run.stats.grabbed == 0
        retries = [r.getMessage() for r in caplog.records]
        assert f"cannot open stream http://127.0.0.1:{port}/cam.ts" in retries[0]
        assert [m.rsplit("retrying in ", 1)[1] for m in retries[:3]] == ["0.2 s", "0.4 s", "0.8 s"]
        # one line per attempt at backoff pace, not a flood
        with HttpTsServer(h264, port=port):
            assert run.frames_flow()


def test_a_file_ends_the_capture_cleanly(h264: Path):
    with Running(str(h264)) as run:
        assert run.capture.done.wait(15)
        assert run.capture.error is None and run.stats.grabbed == 50


def test_the_backoff_starts_afresh_after_a_healthy_stretch_even_when_a_stall_ends_it(
    h264: Path, caplog
):
    caplog.set_level(logging.WARNING, "edge_hf.capture")
    port = free_port()
    policy = CapturePolicy(stall_timeout=1.0, backoff_min=0.2, backoff_max=0.8, healthy=1.0)
    with Running(f"http://127.0.0.1:{port}/cam.ts", policy) as run:
        assert wait_until(lambda: run.stats.failures >= 4, 10)  # the backoff is at its 0.8 s cap
        with HttpTsServer(h264, port=port) as cam:
            assert run.frames_flow(more=75)  # 3 s of frames at 25 fps: healthy (1 s)
            caplog.clear()
            cam.hang()  # the next failure is a stall
            assert wait_until(lambda: "reconnecting in" in caplog.text, 10)
    assert "no frame for more than 1 s (stall); reconnecting in 0.2 s" in caplog.text


def test_frames_resume_within_5_s_of_a_camera_back_from_a_10_s_outage(h264: Path, caplog):
    """Default backoff (1 s doubling to 30 s) but capped at 2 s while the outage is young: the
    old schedule (1, 2, 4, 8 s) resumed 6-9 s after the camera came back."""
    caplog.set_level(logging.INFO, "edge_hf.capture")
    with HttpTsServer(h264) as cam, Running(cam.url, CapturePolicy(stall_timeout=5.0)) as run:
        assert run.frames_flow() and run.stats.connected
        cam.stop()
        assert wait_until(lambda: not run.stats.connected, 5)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:  # still down: never "connected", whatever it tries
            assert not run.stats.connected
            time.sleep(0.05)
        grabbed = run.stats.grabbed
        cam.start()
        back = time.monotonic()
        flowing = lambda: run.stats.grabbed > grabbed and run.stats.connected  # noqa: E731
        assert wait_until(flowing, 5.0), caplog.text
        print(f"frames resumed {time.monotonic() - back:.2f} s after the camera returned")
    came_back = [r for r in caplog.records if "frames again after" in r.getMessage()]
    assert came_back and came_back[0].levelno == logging.INFO
