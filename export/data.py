"""Real hyperframes for calibration and validation: the training split calibrates INT8, the
validation split measures every format. Windows, labels and preprocessing are the trainer's
evaluation windows (``models.dataset.EvalSet``), i.e. exactly what the runtime feeds the model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edge_hf.spec import HyperframeSpec
from export.errors import DataError
from models import data as datasets
from models.cache import FrameCache
from models.dataset import EvalSet, Windows


@dataclass(frozen=True)
class Hyperframes:
    x: np.ndarray  # [M, T, H, W, 3] uint8, the model's input
    y: np.ndarray  # [M] class index
    clip: np.ndarray  # [M] which video each window comes from (a video's logits are averaged)

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class EvalData:
    root: Path
    calib: Hyperframes  # from the training split, shuffled, at most `subset` windows
    val: Hyperframes  # the held-out test split (the trainer never chose anything on it)
    video_level: bool  # one label per video: accuracy is per video, as the trainer reports it
    videos: tuple[int, int]  # (training, validation) videos


def load_data(root: Path, spec: HyperframeSpec, config: dict[str, Any], subset: int) -> EvalData:
    try:
        ds = datasets.load(
            root,
            int(config.get("seed", 0)),
            float(config.get("val_fraction", 0.25)),
            float(config.get("test_fraction", 0.2)),
        )
    except datasets.DataError as e:
        raise DataError(f"calibration data: {e}; pass --calib DATASET") from None
    if set(ds.classes) != set(spec.classes):
        raise DataError(
            f"calibration data {root} has classes {list(ds.classes)} but the model was trained "
            f"on {list(spec.classes)}; pass --calib with the training dataset (or one with the "
            "same classes)"
        )
    # a folder-per-class dataset lists its classes alphabetically: relabel in the model's order
    relabel = np.array([spec.classes.index(c) for c in ds.classes])
    held = ds.test or ds.val  # a dataset written without a test split: its validation part
    for split, videos in (("training", ds.train), ("test", held)):
        if not videos:
            raise DataError(
                f"calibration data {root} has no {split} videos; INT8 calibration needs training "
                "videos and the accuracy report needs test videos"
            )
    cache = FrameCache(Path(config.get("cache", ".cache/frames")), spec.size, spec.interpolation)
    abnormal = frozenset(ds.classes.index(c) for c in config.get("abnormal", ()) if c in ds.classes)
    clips = int(config.get("eval_clips", 3))

    def windows(videos: tuple[datasets.Video, ...]) -> EvalSet:
        strategy = config.get("label_strategy", "video")
        try:
            w = Windows(videos, cache, spec.frames, spec.stride, strategy, abnormal)
        except datasets.DataError as e:
            raise DataError(f"calibration data {root}: {e}") from None
        return EvalSet(w, clips)

    calib = _take(windows(ds.train), relabel, subset, np.random.default_rng(0))
    val = _take(windows(held), relabel, None, None)
    video_level = all(isinstance(v.labels, int) for v in held)
    return EvalData(root, calib, val, video_level, (len(ds.train), len(held)))


def _take(
    es: EvalSet, relabel: np.ndarray, limit: int | None, rng: np.random.Generator | None
) -> Hyperframes:
    order = np.arange(len(es.items)) if rng is None else rng.permutation(len(es.items))
    order = order[:limit] if limit else order
    items = [es.items[i] for i in order]
    x = np.stack([es.w.window(c, s) for c, s, _ in items])
    return Hyperframes(x, relabel[[lab for *_, lab in items]], np.array([c for c, *_ in items]))
