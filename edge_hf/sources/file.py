"""Video files: paced at their own fps (like a camera), or as fast as possible with ``--fast``.

A damaged file does not end the run early: when ``grab()`` fails before the frame count the
container declares, the reader seeks forward past the damaged stretch, a fifth of a second at a
time, until frames decode again or the declared end is reached. Frames lost that way (and a tail
missing from a truncated file) are counted and reported in one warning when the file ends.
"""

from __future__ import annotations

import logging
from pathlib import Path

import cv2

from edge_hf.errors import SourceError
from edge_hf.sources.base import Pacer, SourceOptions
from edge_hf.sources.opencv import CvSource, decoder_params

log = logging.getLogger("edge_hf.sources")


class FileSource(CvSource):
    live = False

    def __init__(self, path: str, name: str, opts: SourceOptions) -> None:
        p = Path(path)
        if not p.is_file():
            raise SourceError(f"video file {path} does not exist; check the path given to --camera")
        super().__init__(name, str(p), str(p), cv2.CAP_ANY, decoder_params(opts.decoder_threads))
        self._opts = opts
        self._pacer = Pacer(self.fps, enabled=False)
        self.declared = 0  # frame count the container declares (0: it does not say)
        self.lost = 0  # frames skipped as undecodable, this pass through the file
        self._warned = False  # said so once (a looped file is damaged the same way each pass)

    def open_error(self) -> str:
        return f"cannot decode video file {self.display}; is it a video OpenCV/FFmpeg can read?"

    def open(self) -> None:
        try:
            super().open()
        except SourceError:
            if not self._params:
                raise
            # a backend other than FFmpeg (picked by CAP_ANY) may refuse the thread bound;
            # a local file is cheap to open twice
            self._params = []
            super().open()
        self.declared = max(0, int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT)))
        self.lost = 0
        self._pacer = Pacer(self.fps, enabled=not self._opts.fast)
        self._pacer.reset()

    def grab(self) -> bool:
        self._pacer.wait()
        if super().grab():
            return True
        if self._cap is None:
            return False
        if self._skip_damage():
            return True
        self._report_loss()
        if not self._opts.loop:
            return False
        self._cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
        return super().grab()

    def _skip_damage(self) -> bool:
        """``grab()`` failed at frame ``pos``: seek forward until a frame decodes, at most up to
        the declared end (bounded: one seek per fifth of a second of video left)."""
        cap = self._cap
        pos = int(cap.get(cv2.CAP_PROP_POS_FRAMES))
        step = max(1, round(self.fps / 5))
        target = pos + step
        while target < self.declared:
            cap.set(cv2.CAP_PROP_POS_FRAMES, target)
            if cap.grab():
                self.lost += target - pos
                return True
            target += step
        self.lost += max(0, self.declared - pos)  # a truncated tail
        return False

    def _report_loss(self) -> None:
        # containers that only estimate their frame count may be a frame or two off
        if self.lost > max(2, self.declared // 100) and not self._warned:
            self._warned = True
            log.warning(
                "video file %s: %d of its %d frames could not be decoded and were skipped "
                "(damaged or truncated file); the rest was analysed",
                self.display,
                self.lost,
                self.declared,
            )
        self.lost = 0
