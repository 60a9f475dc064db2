"""How soon frames resume after a live camera comes back, with the shipped reconnect policy.

    .venv/bin/python -m bench.reconnect [--outages 10 30 60] [--kinds http rtsp]

For each kind of camera (HTTP MPEG-TS, RTSP over UDP: the live fixtures in ``tests/live``, on
127.0.0.1) and each outage length: frames flow, the camera goes away for that many seconds,
comes back, and the script prints the seconds from its return to the next frame read by the
capture thread (``CapturePolicy()`` and ``SourceOptions()`` defaults, as ``edge-hf run`` uses
them). An HTTP camera that goes away closes its connections (the reader sees the loss at once);
an RTSP feed that stops is a stall (seen after ``--stall-timeout``, 10 s). Not a pytest bench: it
takes a few minutes and its numbers are wall-clock times, quoted in docs/runtime.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

from edge_hf.capture import Capture, CapturePolicy, Mailbox
from edge_hf.sampler import StrideSampler
from edge_hf.sources import SourceOptions, open_source
from tests.live import RTSP_CAPTURE_OPTIONS, HttpTsServer, RtspServer, wait_until, write_h264_clip
from tests.motion_model import MOTION_SPEC


def resume_after(kind: str, clip: Path, outage: float) -> float | None:
    server = HttpTsServer(clip) if kind == "http" else RtspServer(clip)
    with server as cam:
        source = open_source(cam.url, SourceOptions())
        sampler = StrideSampler(MOTION_SPEC, 1)
        stop = threading.Event()
        cap = Capture(source, Mailbox(sampler, threading.Condition()), CapturePolicy(), stop)
        cap.start()
        try:
            st = cap.stats
            if not wait_until(lambda: st.grabbed > 25, 30):
                return None
            cam.stop()
            time.sleep(outage)
            grabbed = st.grabbed
            cam.start()
            back = time.monotonic()
            if not wait_until(lambda: st.grabbed > grabbed and st.connected, 120, 0.01):
                return None
            return time.monotonic() - back
        finally:
            stop.set()
            cap.join(15)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outages", type=float, nargs="+", default=[10, 30, 60])
    ap.add_argument("--kinds", nargs="+", default=["http", "rtsp"], choices=["http", "rtsp"])
    a = ap.parse_args()
    os.environ["OPENCV_FFMPEG_LOGLEVEL"] = "-8"
    os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = RTSP_CAPTURE_OPTIONS  # the test server: UDP
    logging.basicConfig(level=logging.WARNING, format="  %(message)s")
    with tempfile.TemporaryDirectory() as d:
        clip = write_h264_clip(Path(d) / "cam.mp4", seconds=4, size=(320, 180))
        for kind in a.kinds:
            for outage in a.outages:
                t = resume_after(kind, clip, outage)
                took = f"{t:.2f} s" if t is not None else "no frames"
                print(f"{kind:5} outage {outage:4.0f} s: frames again {took} after the return")


if __name__ == "__main__":
    main()
