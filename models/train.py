"""Train a hyperframe model.

    python -m models.train --recipe realtime-cpu --data DATASET [--frames 3 ... any TrainConfig field]

Writes ``runs/<name>/``: ``best.pt`` (state dict + spec + config; ``torch.load(weights_only=True)``),
``last.pt`` (for ``--resume``), ``metrics.json``, ``curves.png``, ``confusion.png``.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from edge_hf.spec import HyperframeSpec
from models import data as datasets
from models.augment import AugConfig
from models.cache import FrameCache
from models.config import TrainConfig, parse
from models.data import DataError
from models.dataset import EvalSet, TrainSet, Windows, collate
from models.metrics import confusion, summary
from models.model import HyperframeNet, build
from models.report import plot_confusion, plot_curves

log = logging.getLogger("models")


def spec_for(cfg: TrainConfig, classes: tuple[str, ...]) -> HyperframeSpec:
    alerts = tuple((c, 0.8) for c in classes if c in cfg.abnormal)
    return HyperframeSpec(
        frames=cfg.frames,
        stride=cfg.stride,
        size=(cfg.size, cfg.size),
        classes=classes,
        alert_classes=alerts,
        arch=cfg.arch,
        provenance=(("data", str(cfg.data)), ("recipe", cfg.recipe or "flags")),
    )


def loaders(cfg: TrainConfig, ds: datasets.Dataset) -> tuple[DataLoader, DataLoader, bool]:
    cache = FrameCache(Path(cfg.cache), (cfg.size, cfg.size), "linear")
    abnormal = frozenset(ds.classes.index(c) for c in cfg.abnormal if c in ds.classes)
    tw = Windows(ds.train, cache, cfg.frames, cfg.stride, cfg.label_strategy, abnormal)
    vw = Windows(ds.val, cache, cfg.frames, cfg.stride, cfg.label_strategy, abnormal)
    flip = (
        None
        if ds.flip is None
        else {
            ds.classes.index(a): ds.classes.index(b)
            for a, b in ds.flip.items()
            if a in ds.classes and b in ds.classes
        }
    )
    train = TrainSet(tw, cfg.samples_per_clip, AugConfig(mode=cfg.aug), flip, cfg.seed)
    kw = {"num_workers": cfg.workers, "persistent_workers": cfg.workers > 0, "collate_fn": collate}
    video_level = all(isinstance(v.labels, int) for v in ds.val)
    return (
        DataLoader(train, cfg.batch, shuffle=True, drop_last=len(train) > cfg.batch, **kw),
        DataLoader(EvalSet(vw, cfg.eval_clips), cfg.batch, **kw),
        video_level,
    )


def evaluate(
    model: HyperframeNet, loader: DataLoader, n: int, video_level: bool, device: torch.device
) -> tuple[np.ndarray, float]:
    """Confusion matrix over videos (logits of a video's windows averaged) or over windows."""
    model.eval()
    logits, truth, clips = [], [], []
    with torch.no_grad():
        for x, y, c in loader:
            logits.append(model(x.to(device)).float().cpu())
            truth.append(y)
            clips.append(c)
    lg, tr, cl = torch.cat(logits), torch.cat(truth).numpy(), torch.cat(clips).numpy()
    loss = float(torch.nn.functional.cross_entropy(lg, torch.from_numpy(tr)))
    if video_level:
        ids = np.unique(cl)
        lg = torch.stack([lg[torch.from_numpy(cl == i)].mean(0) for i in ids])
        tr = np.array([tr[cl == i][0] for i in ids])
    return confusion(tr, lg.argmax(1).numpy(), n), loss


def schedule(cfg: TrainConfig, steps_per_epoch: int):
    total, warm = cfg.epochs * steps_per_epoch, cfg.warmup_epochs * steps_per_epoch

    def factor(step: int) -> float:  # linear warm-up, then cosine to zero
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))

    return factor


def optimizer(cfg: TrainConfig, model: torch.nn.Module) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            model.parameters(), cfg.lr, momentum=0.9, weight_decay=cfg.weight_decay
        )
    return torch.optim.AdamW(model.parameters(), cfg.lr, weight_decay=cfg.weight_decay)


def train(cfg: TrainConfig) -> dict:
    torch.manual_seed(cfg.seed)
    device = device_for(cfg)
    ds = datasets.load(Path(cfg.data), cfg.seed, cfg.val_fraction)
    name = cfg.name or f"{Path(cfg.data).name}-t{cfg.frames}s{cfg.stride}-{cfg.aug}"
    out = Path(cfg.out) / name
    out.mkdir(parents=True, exist_ok=True)
    spec = spec_for(cfg, ds.classes)
    train_dl, val_dl, video_level = loaders(cfg, ds)
    model = build(
        cfg.arch,
        cfg.frames,
        len(ds.classes),
        inflation=cfg.inflation,
        pretrained=cfg.pretrained or None,
        stem_bn=cfg.stem_bn,
        size=cfg.size,
    ).to(device)
    opt = optimizer(cfg, model)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule(cfg, len(train_dl)))
    history, best, start = [], -1.0, 0
    if cfg.resume and (out / "last.pt").is_file():
        start, history, best = resume(out / "last.pt", spec, model, opt, sched)
    amp = device.type == "cuda"
    scaler = torch.amp.GradScaler(enabled=amp)
    for epoch in range(start, cfg.epochs):
        train_dl.dataset.epoch = epoch
        row = run_epoch(
            model, train_dl, opt, sched, scaler, amp, device, f"{name} {epoch + 1}/{cfg.epochs}"
        )
        cm, val_loss = evaluate(model, val_dl, len(ds.classes), video_level, device)
        row.update(epoch=epoch + 1, val_loss=val_loss, **summary(cm, ds.classes))
        history.append(row)
        log.info(
            "epoch %d: loss %.3f, val top1 %.3f, macro-F1 %.3f, %.0f samples/s",
            epoch + 1,
            row["loss"],
            row["top1"],
            row["macro_f1"],
            row["samples_per_s"],
        )
        state = {
            "model": model.state_dict(),
            "spec": spec.to_json(),
            "config": json.dumps(cfg.to_dict()),
            "epoch": epoch + 1,
        }
        if row["top1"] > best:
            best = row["top1"]
            torch.save(state, out / "best.pt")
        resumable = {
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "history": json.dumps(history),
            "best": best,
        }
        torch.save({**state, **resumable}, out / "last.pt")
    return write_results(out, name, cfg, ds.classes, history, best)


def device_for(cfg: TrainConfig) -> torch.device:
    if cfg.device != "auto":
        return torch.device(cfg.device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def write_results(
    out: Path,
    name: str,
    cfg: TrainConfig,
    classes: tuple[str, ...],
    history: list[dict],
    best: float,
) -> dict:
    result = {
        "name": name,
        "config": cfg.to_dict(),
        "classes": list(classes),
        "best_top1": best,
        "history": history,
    }
    (out / "metrics.json").write_text(json.dumps(result, indent=1))
    plot_curves(history, out / "curves.png")
    plot_confusion(
        max(history, key=lambda r: r["top1"])["confusion"], classes, out / "confusion.png"
    )
    return result


def run_epoch(model, loader, opt, sched, scaler, amp: bool, device, desc: str) -> dict:
    model.train()
    seen = correct = 0
    total_loss, t0 = 0.0, time.perf_counter()
    bar = tqdm(loader, desc=desc, leave=False, file=sys.stderr, disable=None)
    for x, y in bar:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.type, enabled=amp):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sched.step()
        seen += len(y)
        correct += int((logits.argmax(1) == y).sum())
        total_loss += float(loss.detach()) * len(y)
        bar.set_postfix(
            loss=f"{total_loss / seen:.3f}",
            acc=f"{correct / seen:.3f}",
            sps=f"{seen / (time.perf_counter() - t0):.0f}",
        )
    return {
        "loss": total_loss / max(seen, 1),
        "train_acc": correct / max(seen, 1),
        "samples_per_s": seen / (time.perf_counter() - t0),
    }


def resume(path: Path, spec: HyperframeSpec, model, opt, sched) -> tuple[int, list, float]:
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    old = HyperframeSpec.from_json(ckpt["spec"])
    if old.classes != spec.classes:
        raise DataError(
            f"{path}: cannot resume: it was trained on classes {list(old.classes)}, this dataset has {list(spec.classes)}; use a new --name"
        )
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    return ckpt["epoch"], json.loads(ckpt["history"]), ckpt["best"]


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        cfg = parse(argv)
        results = [train(cfg)]
        if cfg.baseline and cfg.frames > 1:
            results.append(
                train(replace(cfg, frames=1, stride=1, name=(cfg.name or "") and f"{cfg.name}-t1"))
            )
    except (DataError, FileNotFoundError, ValueError) as e:
        print(f"models.train: error: {e}", file=sys.stderr)
        return 2
    for r in results:
        print(f"{r['name']}: best val top-1 {r['best_top1']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
