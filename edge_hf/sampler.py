"""Stride sampler: which source frames a hyperframe needs, a preallocated ring that holds them, and
a gather of the ring into the model's input buffers.

Frame ``i`` of a source goes to ring slot ``i % K`` with ``K = spec.window`` (``(T-1)*stride+1`` for
one input); with a confirming model (two-stage mode) ``K`` is the longer of the two windows, and
each model's inputs are gathered from the same ring at the same anchor. A hyperframe is emitted at every *anchor*: the newest frame of a window, ``K-1``, then
every ``every`` frames. A frame that no anchor will use is never retrieved or resized; this
decision is a table lookup, so the capture thread can ``grab()`` every frame and skip the cost of
decoding the ones it does not need.
"""

from __future__ import annotations

import cv2
import numpy as np

from edge_hf.errors import UsageError
from edge_hf.spec import HyperframeSpec

INTERPOLATION_FLAGS = {
    "nearest": cv2.INTER_NEAREST,
    "linear": cv2.INTER_LINEAR,
    "area": cv2.INTER_AREA,
    "cubic": cv2.INTER_CUBIC,
}


def resize_into(frame: np.ndarray, dst: np.ndarray, interpolation: str = "linear") -> None:
    """Squash a whole BGR frame into ``dst`` (H, W, 3) uint8, in place.

    This is the only resize in edge-hf: the runtime, the trainer's frame cache and evaluation all
    call it, so training and serving see identical pixels.
    """
    h, w = dst.shape[:2]
    cv2.resize(frame, (w, h), dst=dst, interpolation=INTERPOLATION_FLAGS[interpolation])


MAX_EVERY = 100_000  # --every's limit (an hour at 25 fps): the sampler's table has this many rows


def hop_from_hz(hz: float, fps: float) -> int:
    """Frames between hyperframes for a target rate; 1 to MAX_EVERY."""
    if not hz > 0 or not fps > 0 or hz == float("inf"):
        raise UsageError(f"--hz must be > 0, found {hz}")
    return int(max(1, min(MAX_EVERY, round(min(fps / hz, 1e12)))))


def input_buffers(spec: HyperframeSpec, batch: int = 1) -> list[np.ndarray]:
    """Fresh zeroed buffers shaped like the model's inputs, ``batch`` hyperframes deep."""
    return [np.zeros(spec.input_shape(i, batch), np.uint8) for i in range(len(spec.inputs))]


def check_same_frames(screen: HyperframeSpec, confirm: HyperframeSpec, where: str) -> None:
    """Two models on one ring must see the same pixels: frame size and interpolation."""
    for what in ("size", "interpolation"):
        a, b = getattr(screen, what), getattr(confirm, what)
        if a != b:
            raise UsageError(
                f"{where}: the confirming model's frames must be the screening model's, but its "
                f"{what} is {b!r} where the screening model's is {a!r}; export both at the same "
                "size and interpolation"
            )


class StrideSampler:
    """Ring and index tables for one source. Allocates everything in ``__init__``. ``confirm``:
    a second model (two-stage mode) whose inputs come from the same ring; its frames must be
    the same size and interpolation (``check_same_frames``)."""

    def __init__(
        self, spec: HyperframeSpec, every: int, confirm: HyperframeSpec | None = None
    ) -> None:
        if not isinstance(every, int) or not 1 <= every <= MAX_EVERY:
            raise UsageError(
                f"--every must be a whole number of frames 1 to {MAX_EVERY}, found {every!r}"
            )
        self.spec, self.confirm = spec, confirm
        self.specs = (spec,) if confirm is None else (spec, confirm)
        self.window = k = max(s.window for s in self.specs)  # the longest window
        h, w = spec.size
        self.ring = np.zeros((k, h, w, 3), np.uint8)
        # Views made once: indexing the ring per frame would allocate a new view object.
        self.slots = [self.ring[s] for s in range(k)]
        # per model, per input: each frame's lag (spec.inputs, Scale.lags: the one definition)
        self._lags = [[np.asarray(s.lags(), np.int64) for s in m.inputs] for m in self.specs]
        self._all_lags = sorted({int(lag) for m in self._lags for lags in m for lag in lags})
        # per confirming input: the screening input with the same frames (gathered once), or None
        self.shared = (
            []
            if confirm is None
            else [
                next((j for j, s in enumerate(spec.inputs) if s.lags() == c.lags()), None)
                for c in confirm.inputs
            ]
        )
        self.set_every(every)
        # Ring slots of each input's frames, for every anchor position a % K (oldest first).
        self._gather = [
            [np.stack([(r - lags) % k for r in range(k)]).astype(np.intp) for lags in m]
            for m in self._lags
        ]

    def set_every(self, every: int) -> None:
        """A new hop (a source reopened at another fps, with --hz); only between reads, since
        the ring starts afresh after every (re)open."""
        k = self.window
        self.every = every
        # needed(i) for i >= K-1 depends only on i % every: is i + lag an anchor for some lag?
        self._needed = np.array(
            [any((r + lag - (k - 1)) % every == 0 for lag in self._all_lags) for r in range(every)]
        )

    def input_buffers(self, batch: int = 1, model: int = 0) -> list[np.ndarray]:
        """Fresh zeroed buffers shaped like the inputs of model ``model`` (1: the confirming)."""
        return input_buffers(self.specs[model], batch)

    def is_anchor(self, i: int) -> bool:
        """Does frame ``i`` complete a hyperframe?"""
        return i >= self.window - 1 and (i - (self.window - 1)) % self.every == 0

    def is_needed(self, i: int) -> bool:
        """Will any hyperframe use frame ``i``? Frames that are not needed are never decoded."""
        if i >= self.window - 1:
            return bool(self._needed[i % self.every])
        first = self.window - 1  # the earliest anchor
        return any(
            (i + lag - first) % self.every == 0 and i + lag >= first for lag in self._all_lags
        )

    def slot(self, i: int) -> np.ndarray:
        """The ring slot where frame ``i`` is stored (a preallocated view)."""
        return self.slots[i % self.window]

    def frames_of(self, anchor: int, model: int = 0) -> list[list[int]]:
        """Source frame indices of the hyperframe anchored at ``anchor``, per input, oldest first."""
        return [[anchor - int(lag) for lag in lags] for lags in self._lags[model]]

    def gather(self, anchor: int, outs: list[np.ndarray], row: int = 0, model: int = 0) -> None:
        """Copy model ``model``'s hyperframe anchored at ``anchor`` into ``outs[k][row]``
        without allocating (an input whose ``outs[k]`` is None is left out)."""
        r = anchor % self.window
        for table, out in zip(self._gather[model], outs, strict=True):
            if out is None:
                continue
            # mode="clip": with the default "raise", numpy buffers `out` (an allocation).
            np.take(self.ring, table[r], axis=0, out=out[row], mode="clip")
