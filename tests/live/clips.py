"""ffmpeg command lines: writing the H.264 test clip, and looping it into a live feed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

FFMPEG = "ffmpeg"
# debugging knob: more verbose feeder logs (written to the fixture's log file, never the console)
_FF_LOGLEVEL = os.environ.get("EDGEHF_LIVE_FFMPEG_LOGLEVEL", "warning")


def have_ffmpeg() -> bool:
    return shutil.which(FFMPEG) is not None


def write_h264_clip(
    path: str | os.PathLike,
    seconds: float = 4,
    fps: int = 25,
    size: tuple[int, int] = (640, 360),
    source: str | os.PathLike | None = None,
    timeout: float = 60.0,
) -> Path:
    """Write an H.264/yuv420p mp4 with a keyframe every second (GOP = fps).

    ``size`` is (width, height). Without ``source`` the picture is ffmpeg's ``testsrc2``
    (moving, with a frame counter); with ``source`` that file is transcoded (first
    ``seconds`` s, scaled to ``size``, resampled to ``fps``). A short GOP means a reader
    that joins or reconnects mid-stream gets a decodable frame within about a second.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    w, h = size
    if source is None:
        inp = ["-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate={fps}"]
        vf = []
    else:
        inp = ["-i", str(source)]
        vf = ["-vf", f"scale={w}:{h},fps={fps}"]
    cmd = [
        FFMPEG,
        "-hide_banner",
        "-nostdin",
        "-loglevel",
        "error",
        "-y",
        *inp,
        "-t",
        str(seconds),
        *vf,
        "-an",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-tune",
        "zerolatency",
        "-g",
        str(fps),
        "-keyint_min",
        str(fps),
        "-sc_threshold",
        "0",
        "-bf",
        "0",
        "-pix_fmt",
        "yuv420p",
        "-r",
        str(fps),
        "-movflags",
        "+faststart",
        str(path),
    ]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    if r.returncode != 0 or not path.exists():
        raise RuntimeError(
            f"ffmpeg failed ({r.returncode}): {r.stderr.decode(errors='replace')[-2000:]}"
        )
    return path


def existing_clip(clip: str | os.PathLike) -> Path:
    """``clip`` as a Path; FileNotFoundError if it is not there."""
    clip = Path(clip)
    if not clip.exists():
        raise FileNotFoundError(clip)
    return clip


def loop_feed_cmd(clip: Path, *output: str, realtime: bool = True) -> list[str]:
    """ffmpeg copying ``clip`` in an endless loop (at real-time pace) to ``output`` args."""
    return [
        FFMPEG,
        "-hide_banner",
        "-nostdin",
        "-loglevel",
        _FF_LOGLEVEL,
        *(["-re"] if realtime else []),
        "-stream_loop",
        "-1",
        "-i",
        str(clip),
        "-c",
        "copy",
        *output,
    ]
