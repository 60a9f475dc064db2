"""Network cameras: ``rtsp://``, ``rtsps://``, ``http://``, ``https://`` through OpenCV's FFmpeg
backend, with open and read timeouts so a dead camera cannot block the capture thread forever."""

from __future__ import annotations

import cv2

from edge_hf.redact import mask_url
from edge_hf.sources._cv import CvSource
from edge_hf.sources.base import SourceOptions


class StreamSource(CvSource):
    live = True

    def __init__(self, url: str, name: str, opts: SourceOptions) -> None:
        params = [
            cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
            int(opts.open_timeout * 1000),
            cv2.CAP_PROP_READ_TIMEOUT_MSEC,
            int(opts.read_timeout * 1000),
        ]
        super().__init__(name, mask_url(url), url, cv2.CAP_FFMPEG, params)

    def open_error(self) -> str:
        return (
            f"cannot open stream {self.display}; check the address, credentials and that the "
            "camera is reachable from this machine"
        )
