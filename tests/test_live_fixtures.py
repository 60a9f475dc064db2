"""The live-stream fixtures in tests/live/, exercised with a real cv2.VideoCapture (FFmpeg).

These double as executable notes on how OpenCV's FFmpeg backend reacts to a camera that
disappears, freezes and comes back - the behaviour the runtime's capture thread relies on.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from tests.live import (  # noqa: E402
    RTSP_CAPTURE_OPTIONS,
    HttpTsServer,
    RtspServer,
    have_ffmpeg,
    have_rtsp_server,
    write_h264_clip,
)

pytestmark = pytest.mark.skipif(not have_ffmpeg(), reason="ffmpeg not on PATH")

OPEN_MS = 3000
READ_MS = 1000
W, H, FPS = 320, 180, 25


def _params(read_ms: int = READ_MS) -> list[int]:
    return [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, OPEN_MS, cv2.CAP_PROP_READ_TIMEOUT_MSEC, read_ms]


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return write_h264_clip(
        tmp_path_factory.mktemp("live") / "clip.mp4", seconds=2, fps=FPS, size=(W, H)
    )


@pytest.fixture
def quiet_ffmpeg(monkeypatch):
    # OpenCV reads these per open: libav log level (-8 = quiet) and capture options.
    monkeypatch.setenv("OPENCV_FFMPEG_LOGLEVEL", "-8")
    monkeypatch.setenv("OPENCV_FFMPEG_CAPTURE_OPTIONS", RTSP_CAPTURE_OPTIONS)


def _open(url: str, read_ms: int = READ_MS):
    cap = cv2.VideoCapture(url, cv2.CAP_FFMPEG, _params(read_ms))
    assert cap.isOpened(), f"could not open {url}"
    return cap


def _read_frames(cap, n: int, budget: float = 8.0) -> int:
    """grab+retrieve into one preallocated buffer; returns frames read (stops at budget)."""
    buf = np.empty((H, W, 3), np.uint8)
    got = 0
    deadline = time.monotonic() + budget
    while got < n and time.monotonic() < deadline:
        if not cap.grab():
            break
        ok, out = cap.retrieve(buf)
        assert ok and out is buf  # decoded in place, no per-frame allocation
        got += 1
    return got


def _grab_until_false(cap, limit: float) -> tuple[float | None, float]:
    """Grab until grab() is False; returns (seconds until False or None, longest grab)."""
    t0 = time.monotonic()
    longest = 0.0
    while time.monotonic() - t0 < limit:
        t = time.monotonic()
        ok = cap.grab()
        longest = max(longest, time.monotonic() - t)
        if not ok:
            return time.monotonic() - t0, longest
    return None, longest


def test_clip_is_h264_with_declared_fps(clip):
    cap = cv2.VideoCapture(str(clip), cv2.CAP_FFMPEG)
    try:
        assert cap.isOpened()
        assert cap.get(cv2.CAP_PROP_FPS) == pytest.approx(FPS)
        assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 2 * FPS
        assert (cap.get(cv2.CAP_PROP_FRAME_WIDTH), cap.get(cv2.CAP_PROP_FRAME_HEIGHT)) == (W, H)
    finally:
        cap.release()


def test_http_ts_stop_then_restart(clip, quiet_ffmpeg, tmp_path):
    with HttpTsServer(clip, log_path=tmp_path / "http.log") as cam:
        cap = _open(cam.url)
        try:
            assert cap.get(cv2.CAP_PROP_FPS) == pytest.approx(FPS)
            assert _read_frames(cap, 10) == 10

            cam.stop()  # connection closed: buffered frames drain, then EOF
            took, longest = _grab_until_false(cap, limit=5.0)
            assert took is not None and took < 2.0, (took, longest)
            assert not cap.grab()  # stays dead; the same capture never recovers
        finally:
            cap.release()

        assert not cv2.VideoCapture(cam.url, cv2.CAP_FFMPEG, _params()).isOpened()  # refused, fast

        cam.start()
        cap = _open(cam.url)
        try:
            assert _read_frames(cap, 10) == 10
        finally:
            cap.release()


def test_http_ts_hang_trips_read_timeout(clip, quiet_ffmpeg, tmp_path):
    with HttpTsServer(clip, log_path=tmp_path / "http.log") as cam:
        cap = _open(cam.url)
        try:
            assert _read_frames(cap, 10) == 10
            cam.hang()  # socket stays open, no more bytes
            took, longest = _grab_until_false(cap, limit=8.0)
            assert took is not None, "grab() never failed on a frozen stream"
            assert longest < READ_MS / 1000 + 1.0, longest  # one grab blocks ~ the read timeout
        finally:
            cap.release()
        cam.start()
        cap = _open(cam.url)
        try:
            assert _read_frames(cap, 10) == 10
        finally:
            cap.release()


@pytest.mark.skipif(not have_rtsp_server(), reason="rtsp-server-perl not installed")
def test_rtsp_feeder_stop_then_restart(clip, quiet_ffmpeg, tmp_path):
    with RtspServer(clip, log_path=tmp_path / "rtsp.log") as cam:
        cap = _open(cam.url)
        try:
            assert _read_frames(cap, 10) == 10

            cam.stop()  # feeder gone: the RTSP session stays up, RTP just stops (a stall)
            t0 = time.monotonic()
            slow = None  # first grab that blocked for ~ the read timeout
            while time.monotonic() - t0 < 8.0:
                t = time.monotonic()
                ok = cap.grab()
                dt = time.monotonic() - t
                assert dt < READ_MS / 1000 + 1.0, dt  # never blocks much past the read timeout
                if dt > 0.8 * READ_MS / 1000 and slow is None:
                    slow = time.monotonic() - t0
                if not ok:
                    break
            else:
                pytest.fail("grab() never returned False after the feed stopped")
            # a stall shows up as a grab that blocked ~READ_MS, within the first read timeout;
            # grab() may still return True a couple of times (frames flushed from the decoder)
            assert slow is not None and slow < READ_MS / 1000 + 1.0, slow
        finally:
            cap.release()

        cam.start()
        cap = _open(cam.url)
        try:
            assert _read_frames(cap, 10) == 10
        finally:
            cap.release()


@pytest.mark.skipif(not have_rtsp_server(), reason="rtsp-server-perl not installed")
def test_rtsp_server_dies_then_returns(clip, quiet_ffmpeg, tmp_path):
    with RtspServer(clip, log_path=tmp_path / "rtsp.log") as cam:
        cap = _open(cam.url)
        try:
            assert _read_frames(cap, 10) == 10
            cam.stop(server=True)  # RTSP TCP connection reset
            took, longest = _grab_until_false(cap, limit=6.0)
            assert took is not None and longest < READ_MS / 1000 + 1.0, (took, longest)
        finally:
            cap.release()

        t = time.monotonic()
        assert not cv2.VideoCapture(cam.url, cv2.CAP_FFMPEG, _params()).isOpened()
        assert time.monotonic() - t < 1.0  # connection refused fails fast

        cam.start()
        cap = _open(cam.url)
        try:
            assert _read_frames(cap, 10) == 10
        finally:
            cap.release()
