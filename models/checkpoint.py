"""Read a training checkpoint (``runs/<name>/best.pt`` from ``models.train``) into a folded,
evaluation-mode model and its spec, refusing anything that is not ours. The trainer writes the
file; the export and the evaluator (``python -m models.evaluate`` on a checkpoint) read it here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from edge_hf.errors import SpecError
from edge_hf.paths import file_problem
from edge_hf.spec import HyperframeSpec
from models.errors import BadCheckpoint
from models.factory import build
from models.model import HyperframeNet

KEYS = ("model", "spec", "config")
FIX = "pass a runs/<name>/best.pt written by `python -m models.train`"


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    spec: HyperframeSpec
    config: dict[str, Any]
    epoch: int
    net: HyperframeNet  # folded (input scaling inside conv1), eval mode


def network(spec: HyperframeSpec, config: dict[str, Any]) -> HyperframeNet:
    """The untrained network a checkpoint (or an export's report) of this spec and training
    config describes."""
    return build(
        config["arch"],
        spec.frames,
        len(spec.classes),
        stem_bn=bool(config.get("stem_bn")),
        size=spec.size,
        input_mode=config.get("input_mode", "frames"),
        scales=len(spec.inputs),
    )


def load_checkpoint(path: Path) -> Checkpoint:
    state = _read(path)
    if not isinstance(state, dict) or not set(KEYS) <= set(state):
        found = sorted(state) if isinstance(state, dict) else type(state).__name__
        missing = [k for k in KEYS if not isinstance(state, dict) or k not in state]
        raise BadCheckpoint(
            f"{path}: not an edge-hf training checkpoint (missing {missing}, found {found}); {FIX}"
        )
    try:
        spec = HyperframeSpec.from_json(state["spec"], f"{path}: spec")
    except SpecError as e:
        raise BadCheckpoint(f"{e}; {FIX}") from None
    try:
        config = json.loads(state["config"])
        arch = config["arch"]
    except (TypeError, ValueError, KeyError):
        raise BadCheckpoint(f"{path}: its training config is unreadable; {FIX}") from None
    net = network(spec, config)
    try:
        net.load_state_dict(state["model"])
    except (RuntimeError, TypeError, AttributeError) as e:
        first = str(e).strip().splitlines()[0][:160]
        raise BadCheckpoint(
            f"{path}: its weights do not fit a {arch} with {len(spec.classes)} classes "
            f"({first}); {FIX}"
        ) from None
    net.eval()
    net.fold()
    return Checkpoint(path, spec, config, int(state.get("epoch", 0)), net)


def _read(path: Path) -> Any:
    problem = file_problem(path)
    if problem:
        raise BadCheckpoint(f"checkpoint {path} {problem}; {FIX}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    # A file that is not a zip falls through to torch's legacy unpickler, which fails with
    # whatever its parser trips on (struct.error, ValueError, KeyError, UnicodeDecodeError…).
    except Exception as e:
        first = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise BadCheckpoint(
            f"{path}: not a PyTorch checkpoint we can read ({first}); {FIX}"
        ) from None
