"""Training configuration: defaults < recipe (models/recipes/NAME.toml) < command-line flags.
Validated once; unknown recipe keys are errors that suggest the nearest valid key."""

from __future__ import annotations

import argparse
import difflib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import tomllib

from models.augment import MODES
from models.data import STRATEGIES, DataError
from models.model import INFLATIONS

RECIPES = Path(__file__).parent / "recipes"


@dataclass(frozen=True)
class TrainConfig:
    data: str = ""
    name: str = ""
    recipe: str = ""
    arch: str = "mobilenetv3_small_100"
    frames: int = 3
    stride: int = 1
    size: int = 160
    batch: int = 32
    epochs: int = 10
    optimizer: str = "adamw"  # or "sgd" (momentum 0.9, as in the seed)
    lr: float = 0.002
    weight_decay: float = 0.05
    warmup_epochs: int = 0
    samples_per_clip: int = 1  # random hyperframes per clip per epoch
    eval_clips: int = 3  # deterministic windows per validation video, logits averaged
    aug: str = "sync"
    inflation: str = "tile-scaled"
    pretrained: str = ""  # 3-channel weights: a local file, or a URL when online
    stem_bn: bool = False
    label_strategy: str = "video"
    abnormal: tuple[str, ...] = ("fall",)  # classes that count for window-any
    val_fraction: float = 0.25
    baseline: bool = False  # also train T=1 on the same data and report both
    resume: bool = False
    workers: int = 0
    seed: int = 0
    device: str = "auto"
    out: str = "runs"
    cache: str = ".cache/frames"

    def __post_init__(self) -> None:
        checks = [
            (self.optimizer in ("adamw", "sgd"), "optimizer", "adamw or sgd"),
            (self.aug in MODES, "aug", " / ".join(MODES)),
            (self.inflation in INFLATIONS, "inflation", " / ".join(INFLATIONS)),
            (self.label_strategy in STRATEGIES, "label_strategy", " / ".join(STRATEGIES)),
            (
                self.frames >= 1 and self.stride >= 1 and self.size >= 16,
                "frames/stride/size",
                "frames >= 1, stride >= 1, size >= 16",
            ),
            (
                self.epochs >= 1 and self.batch >= 1 and self.samples_per_clip >= 1,
                "epochs/batch/samples_per_clip",
                ">= 1",
            ),
        ]
        for ok, key, expected in checks:
            if not ok:
                raise DataError(
                    f"{key}: expected {expected}, found {getattr(self, key.split('/')[0])!r}"
                )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


FIELDS = {f.name: f for f in fields(TrainConfig)}


def read_recipe(name: str) -> dict[str, Any]:
    path = Path(name) if name.endswith(".toml") else RECIPES / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in RECIPES.glob("*.toml"))
        raise DataError(f"recipe {name!r} not found; expected one of {known} or a .toml path")
    values = tomllib.loads(path.read_text())
    for key in values:
        if key not in FIELDS:
            near = difflib.get_close_matches(key, FIELDS, 1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise DataError(f"{path}: unknown key {key!r}{hint}")
    return values


def parse(argv: list[str] | None = None) -> TrainConfig:
    ap = argparse.ArgumentParser(
        prog="python -m models.train", description="Train a hyperframe model."
    )
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            ap.add_argument(flag, action="store_true", default=None)
        elif f.name == "abnormal":
            ap.add_argument(flag, nargs="+", default=None)
        else:
            ap.add_argument(flag, type={"int": int, "float": float}.get(f.type, str), default=None)
    args = {k: v for k, v in vars(ap.parse_args(argv)).items() if v is not None}
    values = read_recipe(args["recipe"]) if args.get("recipe") else {}
    values.update(args)
    if "abnormal" in values:
        values["abnormal"] = tuple(values["abnormal"])
    if not values.get("data"):
        raise DataError(
            "--data is required: a dataset folder (folder per class, UCF101, or segments.csv)"
        )
    return TrainConfig(**values)
