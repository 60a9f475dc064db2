"""Network cameras: ``rtsp://``, ``rtsps://``, ``http://``, ``https://`` through OpenCV's FFmpeg
backend, with open and read timeouts so a dead camera cannot block the capture thread forever."""

from __future__ import annotations

import cv2

from edge_hf.credentials import with_password
from edge_hf.redact import mask_url
from edge_hf.sources.base import SourceOptions
from edge_hf.sources.opencv import CvSource, decoder_params

_MAX_MS = 2**31 - 1  # OpenCV takes the timeouts as a C int of milliseconds


def _ms(seconds: float) -> int:
    """At least 1 ms: 0 would mean "no timeout" to FFmpeg, and an open that never ends."""
    return max(1, int(min(float(_MAX_MS), seconds * 1000))) if seconds == seconds else 1


class StreamSource(CvSource):
    live = True

    def __init__(
        self, url: str, name: str, opts: SourceOptions, password: str | None = None
    ) -> None:
        params = [
            cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
            _ms(opts.open_timeout),
            cv2.CAP_PROP_READ_TIMEOUT_MSEC,
            _ms(opts.read_timeout),
            *decoder_params(opts.decoder_threads),
        ]
        target = with_password(url, password) if password is not None else url
        super().__init__(name, mask_url(target), target, cv2.CAP_FFMPEG, params)

    def open_error(self) -> str:
        return (
            f"cannot open stream {self.display}; check the address, credentials and that the "
            "camera is reachable from this machine"
        )
