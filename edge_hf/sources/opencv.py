"""Sources read through cv2.VideoCapture: the base class of the file, stream and V4L2 sources,
and the decoder parameters they open with (the bench patches and reuses both).

Opens run side by side. OpenCV's FFmpeg backend holds one process-wide mutex through the whole
of ``CvCapture_FFMPEG::open`` (connect, the HTTP/RTSP exchange, probing the stream), so a camera
that accepts the connection and never answers held every other camera's open, in any thread,
for its whole open timeout: four such cameras made four opens of 2 s take 8 s, one after the
other (the GIL was free all along). ``OPENCV_FFMPEG_IS_THREAD_SAFE=1``, read at every open,
drops that mutex and leaves thread safety to FFmpeg, which has it when built with threads (the
wheel's libavutil uses pthreads; FFmpeg dropped its lock manager in 4.0). Set it to 0 to get
OpenCV's lock back. It is set at import, before any capture thread exists: a setenv beside a
getenv in another thread is not safe.
"""

from __future__ import annotations

import os

import cv2
import numpy as np

from edge_hf.errors import SourceError

os.environ.setdefault("OPENCV_FFMPEG_IS_THREAD_SAFE", "1")
DEFAULT_FPS = 25.0


def decoder_params(threads: int) -> list[int]:
    """OpenCV open parameters that bound FFmpeg's decoder threads for one capture (0: leave
    FFmpeg its default, a thread per core). ``CAP_PROP_N_THREADS`` is read by the FFmpeg
    backend at open; the ``OPENCV_FFMPEG_CAPTURE_OPTIONS`` variable's ``threads;1`` is not
    applied to the decoder by this OpenCV (measured: tests/test_sources.py counts the threads)."""
    return [cv2.CAP_PROP_N_THREADS, threads] if threads > 0 else []


class CvSource:
    """A cv2.VideoCapture with a reusable decode buffer. Subclasses set how to open it."""

    live = False

    def __init__(
        self, name: str, display: str, target: str | int, api: int, params: list[int] | None = None
    ) -> None:
        self.name, self.display = name, display
        self.fps = DEFAULT_FPS
        self._target, self._api, self._params = target, api, params or []
        self._cap: cv2.VideoCapture | None = None
        self._frame: np.ndarray | None = None

    def open(self) -> None:
        """Open (again); ``fps`` is read afresh every time (a camera may come back at
        another rate)."""
        self.release()
        cap = cv2.VideoCapture(self._target, self._api, self._params)
        if not cap.isOpened():
            cap.release()
            raise SourceError(self.open_error())
        self._cap = cap
        fps = cap.get(cv2.CAP_PROP_FPS)
        self.fps = fps if 1.0 <= fps <= 1000.0 else DEFAULT_FPS

    def open_error(self) -> str:
        return f"cannot open {self.display}"

    def grab(self) -> bool:
        return self._cap is not None and self._cap.grab()

    def retrieve(self, out: np.ndarray | None = None) -> np.ndarray | None:
        # OpenCV decodes in place into an array of the right size and type (the same object
        # comes back), and returns a new one otherwise
        ok, frame = self._cap.retrieve(self._frame if out is None else out)
        if not ok or frame is None:
            return None
        if out is None:
            self._frame = frame  # decoded in place from now on (same size and type)
        return frame

    def release(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None
