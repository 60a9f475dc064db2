"""``synth://NAME[?size=WxH&fps=F&seed=S&frames=N&preset=P]``: frames drawn live by
:mod:`edge_hf.synth`.

Endless by default (behaves like a live camera, paced at ``fps``); ``frames=N`` makes it a finite,
non-live source that ends after N frames, like a file. ``preset=easy`` (default) draws the plain
scenes; ``preset=real`` the domain-randomised ones, with procedural textures for backgrounds (the
device has no photographs).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import numpy as np

from edge_hf import synth
from edge_hf.errors import UsageError
from edge_hf.sources.base import Pacer, SourceOptions

_PARAMS = ("size", "fps", "seed", "frames", "preset")


class SynthSource:
    def __init__(self, url: str, name: str, opts: SourceOptions) -> None:
        try:
            parts = urlsplit(url)
        except ValueError as e:  # e.g. an unbalanced '[' where a host would be
            raise UsageError(f"{url}: {e}; expected synth://NAME[?size=WxH&fps=F...]") from None
        scene_name = parts.netloc or parts.path.lstrip("/")
        q = dict(parse_qsl(parts.query, keep_blank_values=True))
        bad = sorted(set(q) - set(_PARAMS))
        if bad:
            raise UsageError(f"{url}: unknown parameter(s) {bad}; expected some of {list(_PARAMS)}")
        try:
            w, h = (int(v) for v in q.get("size", "640x360").lower().split("x"))
            fps, seed = float(q.get("fps", 25)), int(q.get("seed", 0))
            self.frames = int(q["frames"]) if "frames" in q else None
            ok = 16 <= w <= 4096 and 16 <= h <= 4096 and 0.1 <= fps <= 1000 and 0 <= seed < 2**32
            if not ok or (self.frames is not None and not 1 <= self.frames <= 10**12):
                raise ValueError
        except ValueError:
            raise UsageError(
                f"{url}: expected size=WxH (16 to 4096 each), fps=0.1 to 1000, seed=0 to 2^32-1, "
                f"frames=1 or more, found {parts.query!r}"
            ) from None
        try:
            self.scene = synth.make_scene(
                scene_name, seed=seed, size=(h, w), fps=fps, preset=q.get("preset", "easy")
            )
        except ValueError as e:
            raise UsageError(f"{url}: {e}") from None
        self.name, self.display, self.fps = name, url, fps
        self.live = self.frames is None
        self._frame = np.zeros((h, w, 3), np.uint8)
        self._pacer = Pacer(fps, enabled=not opts.fast)
        self._index = -1

    def open(self) -> None:
        self._index = -1
        self._pacer.reset()

    def grab(self) -> bool:
        if self.frames is not None and self._index + 1 >= self.frames:
            return False
        self._pacer.wait()
        self._index += 1
        return True

    def retrieve(self, out: np.ndarray | None = None) -> np.ndarray:
        fits = out is not None and out.shape == self._frame.shape and out.dtype == np.uint8
        frame = out if fits and out.flags.c_contiguous else self._frame
        self.scene.render(self._index, frame)
        return frame

    def release(self) -> None:
        pass
