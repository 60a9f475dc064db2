"""What a training run reports: the starting weights and the chosen ones on the validation and
test splits, and ``metrics.json`` with its plots (matplotlib, Agg): loss/accuracy curves and the
confusion matrix."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import matplotlib
import torch
from torch.utils.data import DataLoader

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from edge_hf.spec import HyperframeSpec  # noqa: E402
from models.config import TrainConfig  # noqa: E402
from models.evaluation.choice import evaluate  # noqa: E402
from models.evaluation.metrics import summary  # noqa: E402
from models.run import Loaders, Run  # noqa: E402

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


def plot_curves(history: list[dict], path: Path) -> None:
    epochs = [r["epoch"] for r in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(epochs, [r["loss"] for r in history], label="train")
    a.plot(epochs, [r["val_loss"] for r in history], label="val")
    a.set(xlabel="epoch", ylabel="loss")
    a.legend()
    b.plot(epochs, [r["train_acc"] for r in history], label="train acc")
    b.plot(epochs, [r["top1"] for r in history], label="val top-1")
    b.plot(epochs, [r["macro_f1"] for r in history], label="val macro-F1")
    b.set(xlabel="epoch", ylim=(0, 1.02))
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_confusion(cm: list[list[int]], classes: tuple[str, ...], path: Path) -> None:
    m = np.array(cm)
    fig, ax = plt.subplots(figsize=(1 + 0.7 * len(classes), 1 + 0.6 * len(classes)))
    ax.imshow(m, cmap="Blues")
    ax.set_xticks(range(len(classes)), classes, rotation=45, ha="right")
    ax.set_yticks(range(len(classes)), classes)
    ax.set(xlabel="predicted", ylabel="true")
    for (i, j), v in np.ndenumerate(m):
        ax.text(
            j, i, str(v), ha="center", va="center", color="white" if v > m.max() / 2 else "black"
        )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
