from __future__ import annotations

import os
import re
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest

from edge_hf.errors import SourceError, UsageError
from edge_hf.redact import mask_url
from edge_hf.sources import SourceOptions, open_source, split_name
from edge_hf.sources.file import FileSource
from edge_hf.sources.stream import StreamSource
from edge_hf.sources.synth import SynthSource
from tests.conftest import run_cli
from tests.live import have_ffmpeg, write_h264_clip
from tests.live.hung import HungCameras

OPTS = SourceOptions()


@pytest.mark.parametrize(
    ("arg", "name", "src"),
    [
        ("/dev/video0", "video0", "/dev/video0"),
        ("2", "video2", "2"),
        ("front=rtsp://u:p@10.0.0.5:554/s?x=1", "front", "rtsp://u:p@10.0.0.5:554/s?x=1"),
        ("rtsp://u:p@cam.local/stream", "cam.local", "rtsp://u:p@cam.local/stream"),
        ("http://127.0.0.1:8080/cam.ts?a=b", "127.0.0.1", "http://127.0.0.1:8080/cam.ts?a=b"),
        ("synth://fall?seed=2", "fall", "synth://fall?seed=2"),
        ("/data/porch clip.mp4", "porch clip", "/data/porch clip.mp4"),
        ("yard=/data/a.mp4", "yard", "/data/a.mp4"),
    ],
)
def test_camera_names(arg, name, src):
    assert split_name(arg) == (name, src)


@pytest.mark.parametrize(
    ("arg", "expect"),
    [
        (
            "ftp://host/x.mp4",
            pytest.raises(
                UsageError,
                match=r"unknown scheme 'ftp'; expected one of \['http', 'https', 'rtsp', 'rtsps', 'synth'\]",
            ),
        ),
        (
            "rtmp://user:secret@host/live",
            pytest.raises(UsageError, match=r"rtmp://user:\*\*\*@host/live"),
        ),
        (
            "/nonexistent/clip.mp4",
            pytest.raises(SourceError, match=r"video file /nonexistent/clip.mp4 does not exist"),
        ),
        (
            "/dev/video99",
            pytest.raises(
                SourceError, match=r"camera /dev/video99 does not exist; `ls /dev/video\*`"
            ),
        ),
        ("99", pytest.raises(SourceError, match=r"camera /dev/video99 does not exist")),
        ("synth://nothing", pytest.raises(UsageError, match=r"synth://nothing: .*nothing")),
        ("synth://fall?size=big", pytest.raises(UsageError, match=r"expected size=WxH")),
        (
            "synth://fall?colour=red",
            pytest.raises(UsageError, match=r"unknown parameter\(s\) \['colour'\]"),
        ),
        ("synth://fall?size=64x48&frames=5", nullcontext()),
        (
            "rtsp://127.0.0.1:1/x",
            nullcontext(),
        ),  # built, not opened: reachability is checked on open
    ],
)
def test_bad_sources_say_what_and_how(arg, expect):
    with expect:
        open_source(arg, OPTS)


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("rtsp://admin:hunter2@10.0.0.2/s", "rtsp://admin:***@10.0.0.2/s"),
        ("mqtts://bob:p%40ss:w@broker:8883/x", "mqtts://bob:***@broker:8883/x"),
        ("rtsp://10.0.0.2/s", "rtsp://10.0.0.2/s"),
        (
            "camera rtsp://a:b@h/1 and http://c:d@h/2",
            "camera rtsp://a:***@h/1 and http://c:***@h/2",
        ),
    ],
)
def test_mask_url(url, masked):
    assert mask_url(url) == masked


def test_stream_display_is_masked():
    s = open_source("rtsp://admin:hunter2@127.0.0.1:1/s", OPTS)
    assert isinstance(s, StreamSource) and "hunter2" not in s.display
    with pytest.raises(SourceError) as e:
        s.open()
    assert "hunter2" not in str(e.value) and "rtsp://admin:***@127.0.0.1:1/s" in str(e.value)


def test_finite_synth_ends_and_endless_is_live():
    s = open_source("synth://wave?frames=4&size=64x48", OPTS)
    assert isinstance(s, SynthSource) and not s.live
    s.open()
    frames = []
    while s.grab():
        frames.append(s.retrieve().copy())
    assert len(frames) == 4 and frames[0].shape == (48, 64, 3)
    assert open_source("synth://wave", OPTS).live


def test_file_source_reads_loops_and_rejects_non_video(tmp_path: Path, fall_clip: Path):
    src = FileSource(str(fall_clip), "c", SourceOptions(fast=True))
    src.open()
    n = 0
    while src.grab():
        n += 1
        if n == 1:
            first = src.retrieve()
            assert first.shape == (180, 320, 3) and first.dtype == np.uint8
            assert src.retrieve() is first  # decoded into the same buffer
    assert n == 700 and src.fps == pytest.approx(25)
    looping = FileSource(str(fall_clip), "c", SourceOptions(fast=True, loop=True))
    looping.open()
    assert sum(looping.grab() for _ in range(1500)) == 1500
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video" * 100)
    with pytest.raises(SourceError, match=r"cannot decode video file .*junk.mp4"):
        FileSource(str(junk), "j", OPTS).open()


@pytest.mark.parametrize("read_after", [0.0, 1.0])
def test_file_source_is_paced_at_its_fps(fall_clip: Path, read_after: float):
    """Pacing is checked by frame count against a clock bound, not a timing ratio: 10 frames at
    25 fps cannot arrive in less than 0.36 s, also when the file was opened a second before its
    first read (at start-up): the second's 25 frames do not come in a burst."""
    src = FileSource(str(fall_clip), "c", OPTS)
    src.open()
    time.sleep(read_after)
    t0 = time.monotonic()
    for _ in range(10):
        assert src.grab()
    assert time.monotonic() - t0 >= 0.36


def test_hung_network_cameras_open_side_by_side():
    """Four cameras that accept the connection and never answer, opened in four threads with a
    1 s open timeout: the opens overlap (one process-wide lock in OpenCV's FFmpeg backend used
    to run them one after the other: 4 s) and each fails with its fix."""
    opts = SourceOptions(open_timeout=1.0)
    with HungCameras(4) as dead:
        sources = [open_source(f"c{i}={u}", opts) for i, u in enumerate(dead.urls)]
        errors: list[Exception] = []

        def try_open(src) -> None:
            try:
                src.open()
            except SourceError as e:
                errors.append(e)

        threads = [threading.Thread(target=try_open, args=(s,)) for s in sources]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        took = time.monotonic() - t0
    assert len(errors) == 4 and all("cannot open stream" in str(e) for e in errors)
    assert took < 2.0, f"4 opens of 1 s took {took:.2f} s: they waited for each other"


@pytest.fixture(scope="module")
def h264_500(tmp_path_factory) -> Path:
    """20 s of H.264 at 25 fps (500 frames, a keyframe every second), moov atom first."""
    if not have_ffmpeg():
        pytest.skip("ffmpeg is needed to write an H.264 clip")
    return write_h264_clip(tmp_path_factory.mktemp("h264") / "clip.mp4", seconds=20, size=(160, 96))


def _damaged(clip: Path, dst: Path) -> Path:
    """A fifth of the file, in the middle, overwritten with random bytes (the container's
    index intact, so the frame count is still declared)."""
    data = bytearray(clip.read_bytes())
    n = len(data) // 5
    data[2 * n : 3 * n] = np.random.default_rng(0).integers(0, 256, n, np.uint8).tobytes()
    dst.write_bytes(bytes(data))
    return dst


def _truncated(clip: Path, dst: Path) -> Path:
    dst.write_bytes(clip.read_bytes()[: clip.stat().st_size // 2])
    return dst


def _png(clip: Path, dst: Path) -> Path:
    import cv2

    cv2.imwrite(str(dst.with_suffix(".png")), np.zeros((96, 160, 3), np.uint8))
    return dst.with_suffix(".png")


def _summary_frames(stderr: str) -> int:
    line = next(ln for ln in stderr.splitlines() if " frames, " in ln)
    return int(line.split(": ")[2].split(" frames")[0])


@pytest.mark.parametrize(
    ("make", "code", "at_least", "needle"),
    [
        (_damaged, 0, 300, r"video file .*: (\d+) of its 500 frames could not be decoded and were"),
        (
            _truncated,
            0,
            240,
            r"video file .*: (\d+) of its 500 frames could not be decoded and were",
        ),
        (_png, 4, 0, r"ERROR .*png: ended after 1 frame\(s\), too few for one hyperframe \(3 fr"),
    ],
    ids=["random-bytes-in-the-middle", "truncated", "png"],
)
def test_a_damaged_file_is_read_past_the_damage_and_says_what_was_lost(
    tmp_path: Path, h264_500: Path, make, code, at_least, needle
):
    path = make(h264_500, tmp_path / "bad.mp4")
    r = run_cli("run", "--fast", "--camera", str(path), timeout=120)
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr
    found = re.findall(needle, r.stderr)
    assert len(found) == 1, r.stderr  # one line, once
    frames = _summary_frames(r.stderr)
    assert frames >= at_least, r.stderr  # it went on past the damage
    if code == 0:
        assert frames + int(found[0]) == 500  # every frame decoded or counted as lost


# --------------------------------------------------------------------------- properties

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from edge_hf.errors import EdgeHFError  # noqa: E402

CAMERA_ARG = st.one_of(
    st.text(max_size=40),
    st.builds(
        "{}{}".format,
        st.sampled_from(["rtsp://", "http://", "synth://", "synth://fall?", "ftp://", "a=", "/"]),
        st.text(max_size=30),
    ),
    st.binary(max_size=20).map(lambda b: "rtsp://h/" + b.decode("utf-8", "surrogateescape")),
)


@settings(max_examples=200, deadline=None)
@given(CAMERA_ARG)
@example("SYNTH://[")  # found by hypothesis: urlsplit's "Invalid IPv6 URL" escaped as a traceback
def test_any_camera_argument_builds_a_source_or_is_a_one_line_error(arg: str):
    """Never an exception of another kind, and never a string OpenCV would crash on."""
    try:
        src = open_source(arg, OPTS)
    except EdgeHFError as e:
        assert "\n" not in str(e)
        return
    src.display.encode("utf-8")  # printable, and what OpenCV gets is UTF-8 too


def test_a_utf8_file_name_opens_and_a_name_that_is_not_utf8_is_refused(tmp_path: Path):
    import os

    from edge_hf import synth

    good = tmp_path / "caméra 日本.avi"
    synth.write_clip(good, synth.make_scene("fall", seed=0, size=(48, 64)), 5, fourcc="MJPG")
    src = open_source(str(good), OPTS)
    src.open()
    assert src.grab() and src.retrieve().shape == (48, 64, 3)
    src.release()
    bad = os.fsencode(tmp_path) + b"/v_\xff.avi"  # OpenCV would segfault on this name
    os.rename(good, bad)
    with pytest.raises(UsageError, match=r"v_\\xff.avi: the file name has bytes that are not"):
        open_source(os.fsdecode(bad), OPTS)


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux /proc is needed")
def test_decoder_threads_are_bounded_per_camera(h264_500: Path):
    """Four H.264 cameras, decoder_threads=1: not one thread more in the process; FFmpeg's own
    choice (0) adds threads per camera on a multi-core box. Counted in /proc/self/task."""

    def added(threads: int) -> int:
        sources = [
            FileSource(str(h264_500), f"c{i}", SourceOptions(decoder_threads=threads))
            for i in range(4)
        ]
        before = _threads()
        try:
            for s in sources:
                s.open()
                assert s.grab() and s.retrieve() is not None
            return _threads() - before
        finally:
            for s in sources:
                s.release()

    assert added(1) == 0
    if (os.cpu_count() or 1) > 1:
        assert added(0) >= 4  # the bound is what made the difference
