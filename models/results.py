"""What a training run reports: the starting weights and the chosen ones on the validation and
test splits, and ``metrics.json`` with its plots."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from edge_hf.spec import HyperframeSpec
from models.choice import evaluate
from models.config import TrainConfig
from models.metrics import summary
from models.report import plot_confusion, plot_curves
from models.run import Loaders, Run

log = logging.getLogger("models")


def start_metrics(pretrained: str, model, dl: Loaders, classes, device) -> dict | None:
    """The starting weights on the validation and test splits when they are an edge-hf checkpoint
    with these classes (a fine-tune: its head kept), so the run says what its epochs added."""
    if not pretrained or "://" in pretrained:
        return None
    state = torch.load(pretrained, map_location="cpu", weights_only=True)
    spec = state.get("spec") if isinstance(state, dict) else None
    if not isinstance(spec, str) or HyperframeSpec.from_json(spec).classes != tuple(classes):
        return None
    out = {
        split: split_metrics(model, loader, dl, classes, device)
        for split, loader in (("val", dl.val), ("test", dl.test))
        if loader is not None
    }
    log.info(
        "starting weights: %s", ", ".join(f"{k} top-1 {v['top1']:.3f}" for k, v in out.items())
    )
    return out


def held_out_metrics(best: Path, model, dl: Loaders, classes, device) -> dict | None:
    """The held-out test split, evaluated once with the chosen checkpoint's weights."""
    if dl.test is None:
        log.warning("no test videos: the test split is empty, so no test metrics")
        return None
    model.load_state_dict(torch.load(best, map_location=device, weights_only=True)["model"])
    return split_metrics(model, dl.test, dl, classes, device)


def split_metrics(model, loader: DataLoader, dl: Loaders, classes, device) -> dict:
    """Loss and ``summary`` of one evaluation split (videos or windows, as ``dl`` says)."""
    cm, loss, _ = evaluate(model, loader, len(classes), dl.video_level, device)
    return {"loss": loss, **summary(cm, classes)}


def write_results(
    run: Run,
    cfg: TrainConfig,
    history: list[dict],
    stopped: dict,
    test: dict | None,
    start: dict | None,
    best: dict | None = None,
) -> dict:
    """``best``: the kept weights' validation scores (default: the chosen epoch's row)."""
    best = best or next(r for r in history if r["epoch"] == stopped["best_epoch"])
    result = {
        "name": run.name,
        "config": cfg.to_dict(),
        "classes": list(run.ds.classes),
        "videos": {k: len(getattr(run.ds, k)) for k in ("train", "val", "test")},
        "flip": run.dl.flip.to_dict(),
        "stopped": stopped,
        "best_top1": best["top1"],
        "test_top1": test["top1"] if test else None,
        "test": test,
        "start": start,
        "history": history,
    }
    (run.out / "metrics.json").write_text(json.dumps(result, indent=1))
    if history:
        plot_curves(history, run.out / "curves.png")
    plot_confusion((test or best)["confusion"], run.ds.classes, run.out / "confusion.png")
    return result
