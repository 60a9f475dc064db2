"""Video files: paced at their own fps (like a camera), or as fast as possible with ``--fast``."""

from __future__ import annotations

from pathlib import Path

import cv2

from edge_hf.errors import SourceError
from edge_hf.sources._cv import CvSource
from edge_hf.sources.base import Pacer, SourceOptions


class FileSource(CvSource):
    live = False

    def __init__(self, path: str, name: str, opts: SourceOptions) -> None:
        p = Path(path)
        if not p.is_file():
            raise SourceError(f"video file {path} does not exist; check the path given to --camera")
        super().__init__(name, str(p), str(p), cv2.CAP_ANY)
        self._opts = opts
        self._pacer = Pacer(self.fps, enabled=False)

    def open_error(self) -> str:
        return f"cannot decode video file {self.display}; is it a video OpenCV/FFmpeg can read?"

    def open(self) -> None:
        super().open()
        self._pacer = Pacer(self.fps, enabled=not self._opts.fast)
        self._pacer.reset()

    def grab(self) -> bool:
        self._pacer.wait()
        if super().grab():
            return True
        if not self._opts.loop or self._cap is None:
            return False
        self._cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
        return super().grab()
