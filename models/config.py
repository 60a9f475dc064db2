"""Training configuration: defaults < recipe (models/recipes/NAME.toml) < command-line flags.
Validated once; unknown recipe keys are errors that suggest the nearest valid key."""

from __future__ import annotations

import argparse
import difflib
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import tomllib

from edge_hf.errors import SpecError
from edge_hf.spec import HyperframeSpec, Scale
from models.augment import MODES
from models.cache import DEFAULT_LIMIT_GB
from models.data import STRATEGIES
from models.errors import BadArguments

RECIPES = Path(__file__).parent / "recipes"
# The network's choices (models.model reads them): listed here, where the settings are checked,
# so that checking them does not import torch and timm.
INFLATIONS = ("tile-scaled", "tile", "mean", "random")  # conv1's 3-channel weights -> 3T
INPUTS = ("frames", "diff")  # what conv1 is shown: the frames, or centre frame + differences


@dataclass(frozen=True)
class TrainConfig:
    data: str = ""
    more_data: tuple[str, ...] = ()  # segments.csv or clip-dataset folders that only train
    name: str = ""
    recipe: str = ""
    arch: str = "mobilenetv3_small_100"
    frames: int = 3
    stride: int = 1
    scales: tuple[str, ...] = ()  # a temporal pyramid: "TxS" or "TxS+O" per input (models.model)
    size: int = 160
    batch: int = 32
    epochs: int = 10
    optimizer: str = "adamw"  # or "sgd" (momentum 0.9, as in the seed)
    lr: float = 0.002
    weight_decay: float = 0.05
    warmup_epochs: int = 0
    soup: int = 1  # members averaged into the kept weights (models/soup.py); 1: one run
    samples_per_clip: int = 1  # random hyperframes per clip per epoch
    eval_clips: int = 3  # deterministic windows per validation video, logits averaged
    aug: str = "sync"
    inflation: str = "tile-scaled"
    pretrained: str = ""  # 3-channel weights: a local file, or a URL when online
    stem_bn: bool = False
    input_mode: str = "frames"  # or "diff": centre frame and frame differences (models.model)
    label_strategy: str = "video"
    abnormal: tuple[str, ...] = ("fall",)  # classes that count for window-any
    action_motion: float = 0.0  # alert clips labelled whole: still windows under this are dropped
    action_top: float = 0.0  # alert clips labelled whole: the share of windows drawn (models.mil)
    backwards: bool = False  # alert windows played in reverse are taught as not the alert
    val_fraction: float = 0.25
    test_fraction: float = 0.2
    flip: str = "auto"
    patience: int = 0
    time_limit: float = 0.0
    baseline: bool = False  # also train T=1 on the same data and report both
    resume: bool = False
    workers: int = 0
    seed: int = 0
    device: str = "auto"
    out: str = "runs"
    cache: str = ".cache/frames"
    cache_limit_gb: float = DEFAULT_LIMIT_GB

    def __post_init__(self) -> None:
        checks = [
            (self.optimizer in ("adamw", "sgd"), "optimizer", "adamw or sgd"),
            (self.aug in MODES, "aug", " / ".join(MODES)),
            (self.inflation in INFLATIONS, "inflation", " / ".join(INFLATIONS)),
            (self.input_mode in INPUTS, "input_mode", " / ".join(INPUTS)),
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
            (self.soup >= 1, "soup", "a whole number of members >= 1 (1: one run)"),
            (
                self.soup == 1 or bool(self.pretrained),
                "soup",
                "1 without --pretrained (members trained from scratch do not average: --soup 1)",
            ),
            (self.patience >= 0, "patience", "a whole number of epochs >= 0 (0: off)"),
            (self.time_limit >= 0, "time_limit", "minutes >= 0 (0: none)"),
            (self.cache_limit_gb >= 0, "cache_limit_gb", "gigabytes >= 0 (0: no limit)"),
            (0 <= self.val_fraction < 1, "val_fraction", "a fraction in [0, 1)"),
            (0 <= self.action_motion < 1, "action_motion", "a fraction in [0, 1) (0: off)"),
            (0 <= self.action_top < 1, "action_top", "a fraction in [0, 1) (0: off)"),
            (0 <= self.test_fraction < 1, "test_fraction", "a fraction in [0, 1)"),
        ]
        if self.scales:  # the spec's own check, at start-up: frames per scale, first stride
            try:
                HyperframeSpec(
                    self.frames, self.stride, (16, 16), ("c",), scales=pyramid_scales(self)
                )
            except SpecError as e:
                raise BadArguments(f"scales {list(self.scales)}: {e}") from None
        for ok, key, expected in checks:
            if not ok:
                raise BadArguments(
                    f"{key}: expected {expected}, found {getattr(self, key.split('/')[0])!r}"
                )

    @property
    def hw(self) -> tuple[int, int]:
        """The input's (H, W): frames are squashed to it, whole (square: the spec and the
        runtime take any H x W, but no recipe trains anything else)."""
        return self.size, self.size

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


FIELDS = {f.name: f for f in fields(TrainConfig)}
TUPLES = tuple(n for n, f in FIELDS.items() if isinstance(f.default, tuple))

HELP = {
    "data": "dataset folder: folder per class, UCF101 layout, or segments.csv",
    "name": "run name: results go to OUT/NAME (default: from the data and T/stride/aug)",
    "recipe": "a recipe in models/recipes (realtime-cpu, ...) or a .toml path; flags override it",
    "arch": "timm backbone name, e.g. mobilenetv3_small_100",
    "frames": "T: frames per hyperframe",
    "stride": "source frames between the hyperframe's frames",
    "more_data": "folders of long videos with frame labels (segments.csv), or the training "
    "part of another clip dataset (UCF101 or folder per class; its test part stays out), that "
    "join the training split only, never validation or test; their labels must be among the "
    "dataset's classes; "
    "DIR:N counts N hyperframes per video of DIR in an epoch instead of --samples-per-clip "
    "(e.g. 1 for clips of a still pose)",
    "scales": "a temporal pyramid, one input per scale through one backbone: TxS[+O] each "
    "(T frames every S, ending O frames before the newest), e.g. 3x1 3x4; T must be --frames "
    "and the first S --stride",
    "size": "input height and width in pixels (frames are squashed to it, whole: no crop)",
    "batch": "samples per training step, per process under torchrun (the global batch is N "
    "times this; --lr is not scaled: docs/training.md)",
    "epochs": "at most this many epochs (the cosine schedule spans them)",
    "optimizer": "adamw or sgd (momentum 0.9)",
    "lr": "peak learning rate",
    "weight_decay": "weight decay",
    "warmup_epochs": "epochs of linear learning-rate warm-up",
    "soup": "train this many members on one split from --pretrained, member I with seed --seed "
    "+ I, and keep the average of their weights (a uniform model soup: no one seed's draw "
    "decides the model; N times the training time, one model's cost on the device); 1: one run; "
    "--pretrained '' trains one run unless --soup is given",
    "samples_per_clip": "random hyperframes per training clip per epoch",
    "eval_clips": "evenly spaced windows per evaluation video; their logits are averaged",
    "aug": "augmentation: sync (one draw per hyperframe), per-frame (the broken ablation), none",
    "inflation": "how 3-channel conv1 weights become 3T channels: tile-scaled, tile, mean, random",
    "pretrained": "weights to start from: 3-channel (timm), an edge-hf best.pt, a local file or a "
    "URL when online; a recipe's path is relative to the recipe; '' starts from scratch",
    "stem_bn": "add a BatchNorm on the stacked input (seed article, pitfall 3)",
    "input_mode": "what conv1 is trained on: frames, or diff (centre frame and frame "
    "differences; folded into conv1 at export, so the model file is the same)",
    "label_strategy": "window labels for frame-level segments: video, center, window-any",
    "abnormal": "the alert classes (threshold 0.8 in the spec; any case or separators), which "
    "also count as abnormal for window-any",
    "action_motion": "clips of an alert class labelled whole (no annotations.csv): windows "
    "whose motion (mean frame difference; the clip's stillest window 0, its busiest 1) is under "
    "this are not trained on or scored, so the standing before a fall and the lying after it "
    "are not taught as the fall; 0: off",
    "action_top": "clips of an alert class labelled whole: from the third epoch on, before "
    "each epoch the model scores their windows and only this share of each clip's, the ones it "
    "scores highest for the clip's class, are trained on (models/mil.py), so the walk before a "
    "fall is not taught as the fall; 0: off",
    "backwards": "also train on the alert classes' windows played in reverse, taught as not "
    "that class (a fall played backwards is someone getting up, which a folder of classes "
    "seldom holds; models/backwards.py), as one more equal share of the draws per alert class; "
    "for alerts that cannot happen backwards",
    "val_fraction": "part of the training videos held out to pick the epoch and stop",
    "test_fraction": "part of all videos held out as the test split (layouts without a test list)",
    "flip": "horizontal-flip labels: auto (flip.json, else pair left/right names), none, or a JSON file",
    "patience": "stop after this many epochs without validation improvement (0: never)",
    "time_limit": "stop after the epoch that passes this many minutes of training, counting "
    "those of the invocations --resume continues (0: none)",
    "baseline": "also train T=1 (single frame) the same way and report both",
    "resume": "continue OUT/NAME/last.pt after its last completed epoch (optimizer, schedule, "
    "draws, best epoch, patience and time spent as they were)",
    "workers": "DataLoader worker processes",
    "seed": "seed for splits, sampling and initialisation",
    "device": "auto, cpu, cuda, cuda:N",
    "out": "folder for runs",
    "cache": "folder for the decoded-frame cache",
    "cache_limit_gb": "size limit of the frame cache in GB: the least recently used videos of "
    "other runs are deleted beyond it (0: no limit)",
}


_SCALE = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*(?:\+\s*(\d+))?\s*$")


def pyramid_scales(cfg: TrainConfig) -> tuple[Scale, ...]:
    """``scales`` as the spec's Scales (``()``: one input of frames x stride)."""
    out = []
    for text in cfg.scales:
        m = _SCALE.match(str(text))
        if not m:
            raise BadArguments(f"scales: expected TxS or TxS+O (e.g. 3x1, 3x4+2), found {text!r}")
        out.append(Scale(int(m[1]), int(m[2]), int(m[3] or 0)))
    return tuple(out)


def read_recipe(name: str) -> dict[str, Any]:
    path = Path(name) if name.endswith(".toml") else RECIPES / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in RECIPES.glob("*.toml"))
        raise BadArguments(f"recipe {name!r} not found; expected one of {known} or a .toml path")
    values = tomllib.loads(path.read_text())
    for key in values:
        if key not in FIELDS:
            near = difflib.get_close_matches(key, FIELDS, 1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise BadArguments(f"{path}: unknown key {key!r}{hint}")
    start = values.get("pretrained", "")
    if start and "://" not in start and not Path(start).is_absolute():
        values["pretrained"] = str((path.parent / start).resolve())  # beside the recipe
    return values


def parse(argv: list[str] | None = None) -> TrainConfig:
    ap = argparse.ArgumentParser(
        prog="python -m models.train", description="Train a hyperframe model."
    )
    for f in fields(TrainConfig):
        flag, text = "--" + f.name.replace("_", "-"), HELP[f.name]
        if f.type == "bool":
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=text)
        elif f.name == "abnormal":
            ap.add_argument(flag, nargs="+", default=None, help=f"{text} (default: fall)")
        elif f.name == "scales":
            ap.add_argument(flag, nargs="+", default=None, metavar="TxS[+O]", help=text)
        elif f.name == "more_data":
            ap.add_argument(flag, nargs="+", default=None, metavar="DIR[:N]", help=text)
        else:
            kind = {"int": int, "float": float}.get(f.type, str)
            default = "" if f.default in ("", 0, 0.0) else f" (default: {f.default})"
            ap.add_argument(flag, type=kind, default=None, help=text + default)
    args = {k: v for k, v in vars(ap.parse_args(argv)).items() if v is not None}
    values = read_recipe(args["recipe"]) if args.get("recipe") else {}
    if args.get("pretrained") == "" and "soup" not in args:
        values.pop("soup", None)  # from scratch: one run, whatever the recipe's soup
    values.update(args)
    for key in TUPLES:  # a recipe's lists, argparse's lists
        if key in values:
            values[key] = tuple(values[key])
    if not values.get("data"):
        raise BadArguments(
            "--data is required: a dataset folder (folder per class, UCF101, or segments.csv)"
        )
    return TrainConfig(**values)
