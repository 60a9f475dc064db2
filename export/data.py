"""Real hyperframes for calibration and measurement: the training split calibrates INT8, the
test split measures every format, and the choices (ranges, accuracy control, the wait) may look
at the validation split only, or at every video of a dataset the model never trained on
(``--tune``). Windows, labels and preprocessing are the trainer's evaluation windows
(``models.dataset.EvalSet``), i.e. exactly what the runtime feeds the model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from edge_hf.spec import HyperframeSpec
from models import alerts
from models import data as datasets
from models.cache import DEFAULT_LIMIT_GB, FrameCache
from models.dataset import EvalSet, Windows
from models.errors import BadData


@dataclass(frozen=True)
class Hyperframes:
    x: np.ndarray  # [M, T, H, W, 3] uint8: every model input's frames in turn (split_inputs)
    y: np.ndarray  # [M] class index
    clip: np.ndarray  # [M] which video each window comes from (a video's logits are averaged)

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class EvalData:
    root: Path
    calib: Hyperframes  # from the training split: at most `subset` windows, balanced (below)
    val: Hyperframes  # the held-out test split (the trainer never chose anything on it)
    tune: Hyperframes  # the validation split (or --tune's videos): what the choices look at
    video_level: bool  # one label per video: accuracy is per video, as the trainer reports it
    videos: tuple[int, int]  # (training, test) videos
    tune_videos: tuple[datasets.Video, ...] = ()  # the videos of `tune` (the wait's)
    classes: tuple[str, ...] = ()  # the dataset's, naming the videos' labels
    tune_root: Path | None = None  # --tune: the dataset `tune` is, in place of the validation split


def load_data(root: Path, spec: HyperframeSpec, config: dict[str, Any], subset: int) -> EvalData:
    try:
        ds = datasets.load(
            root,
            int(config.get("seed", 0)),
            float(config.get("val_fraction", 0.25)),
            float(config.get("test_fraction", 0.2)),
        )
    except BadData as e:
        raise BadData(f"calibration data: {e}; pass --calib DATASET") from None
    if set(ds.classes) != set(spec.classes):
        raise BadData(
            f"calibration data {root} has classes {list(ds.classes)} but the model was trained "
            f"on {list(spec.classes)}; pass --calib with the training dataset (or one with the "
            "same classes)"
        )
    # a folder-per-class dataset lists its classes alphabetically: relabel in the model's order
    relabel = np.array([spec.classes.index(c) for c in ds.classes])
    held = ds.test or ds.val  # a dataset written without a test split: its validation part
    for split, videos in (("training", ds.train), ("test", held)):
        if not videos:
            raise BadData(
                f"calibration data {root} has no {split} videos; INT8 calibration needs training "
                "videos and the accuracy report needs test videos"
            )
    windows = _windows_of(root, ds, spec, config)
    calib = balanced(windows(ds.train), relabel, subset)
    clips = int(config.get("eval_clips", 3))
    val = _take(EvalSet(windows(held), clips), relabel)
    tuned = ds.val if ds.val and ds.test else held
    tune = _take(EvalSet(windows(tuned), clips), relabel) if tuned is not held else val
    video_level = all(v.video_class >= 0 for v in held)
    return EvalData(
        root, calib, val, tune, video_level, (len(ds.train), len(held)), tuned, ds.classes
    )


def _windows_of(
    root: Path,
    ds: datasets.Dataset,
    spec: HyperframeSpec,
    config: dict[str, Any],
    what: str = "calibration data",
) -> Callable[[tuple[datasets.Video, ...]], Windows]:
    """The trainer's windows over some of ``ds``'s videos, as its config made them."""
    cache = FrameCache(
        Path(config.get("cache", ".cache/frames")),
        spec.size,
        spec.interpolation,
        float(config.get("cache_limit_gb", DEFAULT_LIMIT_GB)),
    )
    named = alerts.named(ds.classes, config.get("abnormal", ()))
    abnormal = frozenset(ds.classes.index(c) for c in named)
    motion = float(config.get("action_motion", 0.0))  # the trainer's windows, still ones left out

    def windows(videos: tuple[datasets.Video, ...]) -> Windows:
        strategy = config.get("label_strategy", "video")
        try:
            return Windows(videos, cache, spec.inputs, strategy, abnormal, motion)
        except BadData as e:
            raise BadData(f"{what} {root}: {e}") from None

    return windows


@dataclass(frozen=True)
class Unseen:
    """Every video of a dataset the model never saw (no split held back), of its classes."""

    hf: Hyperframes  # their evaluation windows, labelled in the model's class order
    video_level: bool  # one label per video
    left_out: dict[str, int]  # videos of classes the model does not know, by class
    videos: tuple[datasets.Video, ...]  # the videos kept
    classes: tuple[str, ...]  # the dataset's, naming the videos' labels


def every_video(
    root: Path, spec: HyperframeSpec, config: dict[str, Any], what: str = "held-out data"
) -> Unseen:
    """The evaluation windows of every video in ``root``; videos of classes the model does not
    know are left out and counted (per-video labels only: a stream labelled per frame needs
    every one of its classes known)."""
    try:
        ds = datasets.load(root)
    except BadData as e:
        raise BadData(f"{what}: {e}") from None
    videos = ds.train + ds.val + ds.test
    video_level = all(v.video_class >= 0 for v in videos)
    known = [c for c in ds.classes if c in spec.classes]
    if not known or (len(known) < len(ds.classes) and not video_level):
        raise BadData(
            f"{what} {root} has classes {list(ds.classes)} but the model was trained on "
            f"{list(spec.classes)}; pass a dataset of the same classes"
        )
    left = {c: sum(v.video_class == k for v in videos) for k, c in enumerate(ds.classes)}
    left = {c: n for c, n in left.items() if c not in known and n}
    videos = tuple(v for v in videos if v.video_class < 0 or ds.classes[v.video_class] in known)
    if not videos:
        raise BadData(f"{what} {root} has no videos of the model's classes")
    relabel = np.array([spec.classes.index(c) if c in known else -1 for c in ds.classes])
    w = _windows_of(root, ds, spec, config, what)(videos)
    hf = _take(EvalSet(w, int(config.get("eval_clips", 3))), relabel)
    return Unseen(hf, video_level, left, videos, ds.classes)


def tuned_on(data: EvalData, root: Path, spec: HyperframeSpec, config: dict[str, Any]) -> EvalData:
    """``data`` with every video of ``root`` (videos the model never trained on) as the set INT8
    and the wait for lying are chosen on, in place of the trainer's validation split."""
    u = every_video(root, spec, config, "--tune data")
    if u.video_level != data.video_level:
        per = {True: "one label per video", False: "labels per frame"}
        raise BadData(
            f"--tune data {root}: expected {per[data.video_level]}, as the training dataset "
            f"has, found {per[u.video_level]}"
        )
    return replace(data, tune=u.hf, tune_videos=u.videos, classes=u.classes, tune_root=root)


def _take(es: EvalSet, relabel: np.ndarray) -> Hyperframes:
    x = np.stack([es.w.window(c, s) for c, s, _ in es.items])
    return Hyperframes(
        x, relabel[[lab for *_, lab in es.items]], np.array([c for c, *_ in es.items])
    )


def motion(first: np.ndarray, last: np.ndarray) -> float:
    """How much a hyperframe moves: mean absolute difference of its first and last frames on a
    4x subsampled grid (cheap; enough to rank windows)."""
    a = first[::4, ::4].astype(np.int16)
    return float(np.abs(last[::4, ::4].astype(np.int16) - a).mean())


def spread(w: Windows, limit: int) -> list[tuple[int, int, int]]:
    """At most ``limit`` windows (clip, start, label) of ``w``: the same number per label, spread
    evenly from each label's stillest window to its fastest, in a fixed shuffled order (NNCF
    takes the first ones). What tells a fall from a lie-down is the rare fast window; a random
    sample of a clip is mostly its still lead-in and tail."""
    per_class: dict[int, list[tuple[float, int, int]]] = {}
    first, last = int(w.offsets.min()), int(w.offsets.max())  # the window's oldest, newest
    for c, (starts, labels) in enumerate(zip(w.starts, w.labels, strict=True)):
        clip = w.clip(c)
        for s, lab in zip(starts.tolist(), labels.tolist(), strict=True):
            per_class.setdefault(lab, []).append((motion(clip[s + first], clip[s + last]), c, s))
    quota = max(1, limit // max(1, len(per_class)))
    items: list[tuple[int, int, int]] = []
    for lab, cands in sorted(per_class.items()):
        cands.sort()
        picks = np.unique(np.linspace(0, len(cands) - 1, min(quota, len(cands))).round())
        items += [(cands[int(i)][1], cands[int(i)][2], lab) for i in picks]
    order = np.random.default_rng(0).permutation(len(items))
    return [items[i] for i in order]


def balanced(w: Windows, relabel: np.ndarray, limit: int) -> Hyperframes:
    """Calibration windows (``spread``), so that the rare fast motion sets activation ranges too."""
    items = spread(w, limit)
    x = np.stack([w.window(c, s) for c, s, _ in items])
    return Hyperframes(x, relabel[[lab for *_, lab in items]], np.array([c for c, *_ in items]))
