"""USB and CSI cameras through Video4Linux2: ``/dev/videoN`` or a bare index ``N``."""

from __future__ import annotations

import os

import cv2

from edge_hf.errors import SourceError
from edge_hf.sources.base import SourceOptions
from edge_hf.sources.opencv import CvSource


class V4L2Source(CvSource):
    live = True

    def __init__(self, device: str, name: str, opts: SourceOptions) -> None:
        path = f"/dev/video{device}" if device.isdigit() else device
        # A camera missing at start-up is a configuration error; one that goes away later is
        # reopened with backoff like any live source.
        if not os.path.exists(path):
            raise SourceError(
                f"camera {path} does not exist; `ls /dev/video*` lists the cameras this machine "
                "sees (is it plugged in, and is the user in the `video` group?)"
            )
        super().__init__(name, path, path, cv2.CAP_V4L2)

    def open_error(self) -> str:
        return (
            f"cannot open camera {self.display}; is another program using it, and may this "
            "user read it (group `video`)?"
        )
