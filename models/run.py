"""A training run's parts, as the loop (``models.train``) builds them and its report
(``models.results``) reads them: here, so that neither of the two imports the other."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from torch.utils.data import DataLoader

from edge_hf.spec import HyperframeSpec
from models import data as datasets
from models.flips import FlipPlan


class Loaders(NamedTuple):
    train: DataLoader
    val: DataLoader  # picks the epoch and stops training
    test: DataLoader | None  # reported once, with the chosen weights (None: no test videos)
    video_level: bool  # one label per video: accuracy per video, else per window
    flip: FlipPlan
    alerts: tuple[int, ...]  # alert classes with validation clips labelled whole (choice)


class Run(NamedTuple):
    name: str
    out: Path
    ds: datasets.Dataset
    spec: HyperframeSpec
    dl: Loaders
