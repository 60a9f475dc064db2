"""Hyperframe samples for torch: windows of cached frames, labelled by a strategy, augmented
once per hyperframe. Evaluation windows are fixed and see exactly the runtime's preprocessing."""

from __future__ import annotations

import logging
from collections import OrderedDict

import numpy as np
import torch
from torch.utils.data import Dataset

from edge_hf.spec import Scale
from models.augment import AugConfig, augment
from models.cache import FrameCache
from models.data import Video, window_label
from models.errors import BadData

log = logging.getLogger("models")
OPEN_CLIPS = 1024  # cache entries mapped at once: each map holds a file descriptor


def offsets_of(inputs: tuple[Scale, ...]) -> np.ndarray:
    """Frames of a window after its first frame, every input's in turn (oldest first within an
    input): the spec's lags (``Scale.lags()``) turned round from the window's newest frame, so
    training, calibration and the runtime's gather (edge_hf.sampler) pick the same frames."""
    lags = np.concatenate([np.asarray(s.lags(), np.int64) for s in inputs])
    return int(lags.max()) - lags


def split_inputs(x, inputs: tuple[Scale, ...]) -> list:
    """A window's frames (axis 1: every input's in turn) -> one array per model input."""
    if len(inputs) == 1:
        return [x]
    cuts = np.cumsum([s.frames for s in inputs])[:-1].tolist()
    return [x[:, a:b] for a, b in zip([0, *cuts], [*cuts, x.shape[1]], strict=True)]


def moving(frames: np.ndarray, starts: np.ndarray, span: int, least: float) -> np.ndarray:
    """Which windows of a clip move: each window's mean absolute difference between successive
    grey frames, scaled so that the clip's stillest window is 0 and its busiest 1, at least
    ``least``. The scale makes steady noise and a constant background motion count for nothing;
    a clip that barely moves at all keeps every window."""
    grey = frames.mean(axis=3, dtype=np.float32)
    step = np.abs(np.diff(grey, axis=0)).mean(axis=(1, 2))  # frame t to t + 1
    csum = np.concatenate([[0.0], np.cumsum(step)])
    energy = (csum[starts + span - 1] - csum[starts]) / max(span - 1, 1)
    lo, hi = float(energy.min()), float(energy.max())
    if hi - lo < 0.5:  # under half a grey level between the stillest and busiest windows
        return np.ones(len(starts), bool)
    return (energy - lo) / (hi - lo) >= least


class Windows:
    """Valid hyperframe windows of a set of videos (start frames whose label is not -1). A window
    is every model input's frames in turn (``offsets_of``): ``[sum of T, H, W, 3]``. Clips are
    memory maps of the frame cache, ``OPEN_CLIPS`` open at a time (the least recently used closes):
    a pretraining set of 20 000 clips would otherwise run out of file descriptors."""

    def __init__(
        self,
        videos: tuple[Video, ...],
        cache: FrameCache,
        inputs: tuple[Scale, ...],
        strategy: str,
        abnormal: frozenset[int],
        motion: float = 0.0,
    ) -> None:
        self.inputs = inputs
        self.offsets = offsets_of(inputs)
        self.span = int(self.offsets.max()) + 1
        label_frames = sorted(set(self.offsets.tolist()))  # the frames a window sees, once each
        self.files: list[str] = []  # per clip: its frame cache entry
        self.sources: list = []  # per clip: its video (decoded again if another run evicted it)
        self.cache = cache
        self._open: OrderedDict[int, np.ndarray] = OrderedDict()
        self.starts: list[np.ndarray] = []  # per clip: valid start frames
        self.labels: list[np.ndarray] = []  # per clip: label of each valid start
        self.video: list[int] = []  # per clip: the clip's class, or -1 (a stream)
        self.whole: list[bool] = []  # per clip: an alert class's clip labelled whole
        self.draws: list[int] = []  # per clip: hyperframes per training epoch (0: the default)
        unreadable, short = [], []
        for v in videos:
            arr = cache.frames(v.path)
            if arr is None:
                unreadable.append(v.path.name)
                continue
            if len(arr) < self.span:
                short.append(f"{v.path.name} ({len(arr)} frames)")
                continue
            starts, labels = [], []
            for s in range(len(arr) - self.span + 1):
                lab = window_label(v.labels, [s + f for f in label_frames], strategy, abnormal)
                if lab >= 0:
                    starts.append(s)
                    labels.append(lab)
            whole = isinstance(v.labels, int) and v.labels in abnormal
            if starts and motion > 0 and whole:
                keep = moving(arr, np.array(starts), self.span, motion).tolist()
                starts = [s for s, k in zip(starts, keep, strict=True) if k]
                labels = [lab for lab, k in zip(labels, keep, strict=True) if k]
            if starts:
                self.files.append(str(arr.filename))
                self.sources.append(v.path)
                self.starts.append(np.array(starts))
                self.labels.append(np.array(labels))
                self.video.append(v.video_class)
                self.whole.append(whole)
                self.draws.append(v.draws)
        if unreadable:
            log.warning(
                "skipped %d unreadable video(s): %s", len(unreadable), ", ".join(unreadable[:10])
            )
        if short:
            log.warning(
                "skipped %d clip(s) shorter than the hyperframe window of %d frames: %s",
                len(short),
                self.span,
                ", ".join(short[:10]),
            )
        if not self.files:
            raise BadData(
                f"no usable videos among {len(videos)} (unreadable: {len(unreadable)}, "
                f"shorter than {self.span} frames: {len(short)})"
            )

    def __len__(self) -> int:
        return len(self.files)

    def clip(self, c: int) -> np.ndarray:
        """All frames of clip ``c`` (a read-only memory map)."""
        arr = self._open.pop(c, None)
        if arr is None:
            try:
                arr = np.load(self.files[c], mmap_mode="r")
            except FileNotFoundError:  # evicted by another run sharing the cache folder
                arr = self.cache.frames(self.sources[c])
            if len(self._open) >= OPEN_CLIPS:
                self._open.popitem(last=False)
        self._open[c] = arr
        return arr

    def window(self, clip: int, start: int, backwards: bool = False) -> np.ndarray:
        """The window at ``start``; ``backwards``: its frames played in reverse (models.backwards)."""
        offsets = self.span - 1 - self.offsets if backwards else self.offsets
        return self.clip(clip)[start + offsets]

    def __getstate__(self) -> dict:  # DataLoader workers map their own
        return {**self.__dict__, "_open": OrderedDict()}


class TrainSet(Dataset):
    """Random augmented windows, ``samples_per_clip`` per clip per epoch (a clip's own ``draws``
    if it has them: ``--more-data DIR:N``), each label an equal share of them: a label first,
    then a clip that has windows of it, then one of those windows. The short action of an
    annotated clip (a fall, then lying) is not drowned by the long still parts around it, and a
    label many clips carry (``other``: lying, sitting) does not outweigh the actions. Each label
    in ``backwards`` has a second share: its windows played in reverse, labelled ``-1 - label``
    ("not that label", models.backwards)."""

    def __init__(
        self,
        w: Windows,
        samples_per_clip: int,
        aug: AugConfig,
        flip: dict[int, int] | None,
        seed: int,
        backwards: frozenset[int] = frozenset(),
    ) -> None:
        self.w, self.aug, self.flip, self.seed = w, aug, flip, seed
        self.epoch = 0
        where: dict[int, list[tuple[int, np.ndarray]]] = {}  # label: [(clip, window indices)]
        for c, labels in enumerate(w.labels):
            for lab in np.unique(labels).tolist():
                where.setdefault(lab, []).append((c, np.flatnonzero(labels == lab)))
        self.where = self.every = [where[lab] for lab in sorted(where)]
        self.backwards = [  # one frame (T=1) reads the same backwards: nothing to learn
            k for k, lab in enumerate(sorted(where)) if lab in backwards and w.span > 1
        ]
        self.n = sum(d or samples_per_clip for d in w.draws)

    def __len__(self) -> int:
        return self.n

    def choose(self, picks: dict[int, np.ndarray]) -> None:
        """Draw clip ``c``'s windows only among ``picks[c]`` (window indices; models.mil) until
        the next choice; the other clips keep all theirs."""
        self.where = [[(c, picks.get(c, g)) for c, g in clips] for clips in self.every]

    def draw(self, i: int) -> tuple[int, int, np.random.Generator]:
        """Sample ``i`` of this epoch: its clip, its window index there, and the generator that
        goes on to augment it."""
        rng = np.random.default_rng((self.seed, self.epoch, i))
        clips = self.where[self.share(i)[0]]
        c, group = clips[int(rng.integers(len(clips)))]
        return c, int(group[rng.integers(len(group))]), rng

    def share(self, i: int) -> tuple[int, bool]:
        """Which label's share sample ``i`` is drawn from (its place among the labels), and
        whether it is drawn backwards (a backwards label's second share)."""
        k = i % (len(self.where) + len(self.backwards))
        if k < len(self.where):
            return k, False
        return self.backwards[k - len(self.where)], True

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        c, j, rng = self.draw(i)
        back = self.share(i)[1]
        frames, label = augment(
            self.w.window(c, int(self.w.starts[c][j]), back),
            int(self.w.labels[c][j]),
            rng,
            self.aug,
            self.flip,
        )
        return frames, -1 - label if back else label


class EvalSet(Dataset):
    """``clips`` evenly spaced windows per video; ``video`` says which, for averaging. In a clip
    with a class and per-frame labels, the windows labelled with the clip's class (its action)."""

    def __init__(self, w: Windows, clips: int) -> None:
        self.w = w
        self.items = []
        for c, starts in enumerate(w.starts):
            own = np.flatnonzero(w.labels[c] == w.video[c])
            where = own if len(own) else np.arange(len(starts))
            picks = where[np.unique(np.linspace(0, len(where) - 1, clips).round().astype(int))]
            self.items += [(c, int(starts[p]), int(w.labels[c][p])) for p in picks]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[np.ndarray, int, int]:
        c, s, label = self.items[i]
        return self.w.window(c, s), label, c


def collate(items: list[tuple]) -> tuple[torch.Tensor, ...]:
    """Stack in numpy: torch.stack of many small uint8 tensors is several times slower."""
    cols = list(zip(*items, strict=True))
    return (torch.from_numpy(np.stack(cols[0])), *(torch.tensor(c) for c in cols[1:]))
