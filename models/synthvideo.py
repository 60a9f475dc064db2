"""Encode a synthetic scene to a video file the way cameras do: MJPG at a random JPEG quality,
or H.264 at a random bit rate through ffmpeg (workstation side; used by ``models.synthdata``).

Codecs (:data:`CODECS`):

- ``mjpeg``: OpenCV's own MJPEG writer (``.avi``), JPEG quality drawn from :data:`JPEG_QUALITY`;
- ``mjpeg-default``: the same container through OpenCV's default backend and quality (what the
  ``easy`` preset has always written);
- ``h264``: ``ffmpeg`` (libx264, no B-frames, one keyframe every 2 s, ``.mp4`` or ``.avi``) at a
  bit rate drawn from :data:`H264_KBPS` for a 320x180 frame, scaled by the frame area.

Frames are rendered into one buffer and handed to the encoder: nothing is allocated per frame.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np

from edge_hf.synth import Scene

CODECS: tuple[str, ...] = ("mjpeg", "mjpeg-default", "h264")
JPEG_QUALITY = (30, 90)
H264_KBPS = (150, 700)  # at 320x180: cheap cameras' substreams to a clean main stream


class EncoderMissing(RuntimeError):
    """ffmpeg is not on PATH."""


def write(path: Path, scene: Scene, codec: str, rng: np.random.Generator) -> None:
    """Write one pass of `scene` (``scene.length`` frames) to `path` with `codec`."""
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}; expected one of {CODECS}")
    if codec == "h264":
        _write_h264(path, scene, rng)
        return
    hgt, wid = scene.size
    fourcc = cv2.VideoWriter_fourcc(*"MJPG")
    if codec == "mjpeg":
        writer = cv2.VideoWriter(
            os.fspath(path), cv2.CAP_OPENCV_MJPEG, fourcc, scene.fps, (wid, hgt)
        )
        writer.set(cv2.VIDEOWRITER_PROP_QUALITY, float(rng.integers(*JPEG_QUALITY, endpoint=True)))
    else:
        writer = cv2.VideoWriter(os.fspath(path), fourcc, scene.fps, (wid, hgt))
    try:
        if not writer.isOpened():
            raise OSError(f"cannot open a video writer for {path}: check the folder exists")
        frame = np.empty((hgt, wid, 3), np.uint8)
        for i in range(scene.length):
            scene.render(i, frame)
            writer.write(frame)
    finally:
        writer.release()


def _write_h264(path: Path, scene: Scene, rng: np.random.Generator) -> None:
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise EncoderMissing("ffmpeg not found on PATH: install it, or write MJPG instead")
    hgt, wid = scene.size
    kbps = int(rng.uniform(*H264_KBPS) * (hgt * wid) / (180 * 320))
    cmd = [
        exe,
        "-loglevel",
        "error",
        "-y",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "bgr24",
        "-s",
        f"{wid}x{hgt}",
        "-r",
        f"{scene.fps:g}",
        "-i",
        "-",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-bf",
        "0",
        "-g",
        str(round(2 * scene.fps)),
        "-b:v",
        f"{kbps}k",
        "-maxrate",
        f"{2 * kbps}k",
        "-bufsize",
        f"{2 * kbps}k",
        "-pix_fmt",
        "yuv420p",
        "-threads",
        "1",
        os.fspath(path),
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    frame = np.empty((hgt, wid, 3), np.uint8)
    try:
        for i in range(scene.length):
            scene.render(i, frame)
            proc.stdin.write(memoryview(frame).cast("B"))
        proc.stdin.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.wait() != 0:
        raise OSError(f"ffmpeg failed writing {path}: {err.strip()[-300:]}")
