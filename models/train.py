"""Train a hyperframe model.

    python -m models.train --recipe realtime-cpu --data DATASET [--frames 3 ... any TrainConfig field]

Writes ``runs/<name>/``: ``best.pt`` (state dict + spec + config; ``torch.load(weights_only=True)``),
``last.pt`` (for ``--resume``), ``metrics.json``, ``curves.png``, ``confusion.png``.

The epoch is chosen on a validation part carved from the training videos; the test split
(UCF101's test list, or a held-out part) is evaluated once, with the chosen weights, and reported
separately. ``metrics.json`` records why training stopped (all epochs, a validation plateau after
``--patience`` epochs, or ``--time-limit``), the flip map used and the test metrics.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from edge_hf.spec import HyperframeSpec
from models import backwards, flips, soup
from models import data as datasets
from models.alerts import alert_names, spec_for, warn_about
from models.augment import AugConfig
from models.cache import FrameCache
from models.config import TrainConfig, parse
from models.dataset import EvalSet, TrainSet, Windows, collate
from models.errors import BadData, WorkstationError
from models.evaluation.choice import evaluate, whole_alerts
from models.evaluation.metrics import summary
from models.factory import build
from models.mil import AFTER, choose, describe
from models.results import held_out_metrics, split_metrics, start_metrics, write_results
from models.run import Loaders, Run
from models.stopper import Stopper

log = logging.getLogger("models")


def loaders(
    cfg: TrainConfig, ds: datasets.Dataset, spec: HyperframeSpec, member: int = 0
) -> Loaders:
    cache = FrameCache(Path(cfg.cache), cfg.hw, "linear", cfg.cache_limit_gb)
    abnormal = frozenset(ds.classes.index(c) for c in alert_names(cfg, ds.classes))

    def windows(videos: tuple[datasets.Video, ...]) -> Windows:
        return Windows(videos, cache, spec.inputs, cfg.label_strategy, abnormal, cfg.action_motion)

    if not ds.val:
        raise BadData(
            f"{ds.root}: no validation videos (the epoch is chosen on them): use more videos or "
            f"a larger --val-fraction (now {cfg.val_fraction})"
        )
    flip = flips.plan(cfg.flip, ds)
    aug = AugConfig(mode=cfg.aug)
    back = abnormal if cfg.backwards else frozenset()
    train = TrainSet(
        windows(ds.train),
        cfg.samples_per_clip,
        aug,
        flip.indices(ds.classes),
        cfg.seed + member,
        back,
    )
    if train.backwards:
        names = ", ".join(ds.classes[c] for c in sorted(back))
        log.info("windows also drawn backwards, taught as not their class (--backwards): %s", names)
    kw = {"num_workers": cfg.workers, "persistent_workers": cfg.workers > 0, "collate_fn": collate}
    # training workers start afresh each epoch: they see its number and --action-top's choice
    train_kw = {**kw, "persistent_workers": False}
    test = (
        DataLoader(EvalSet(windows(ds.test), cfg.eval_clips), cfg.batch, **kw) if ds.test else None
    )
    val = EvalSet(windows(ds.val), cfg.eval_clips)
    return Loaders(
        DataLoader(train, cfg.batch, shuffle=True, drop_last=len(train) > cfg.batch, **train_kw),
        DataLoader(val, cfg.batch, **kw),
        test,
        all(v.video_class >= 0 for v in ds.val + ds.test),
        flip,
        whole_alerts(val.w, abnormal),
    )


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


def prepare(cfg: TrainConfig, member: int = 0) -> Run:
    """The run's name, folder, splits (seeded by ``--seed``) and loaders (their draws seeded by
    ``--seed`` + ``member``)."""
    ds = datasets.load(Path(cfg.data), cfg.seed, cfg.val_fraction, cfg.test_fraction)
    datasets.two_classes(ds)
    ds = datasets.add_training(ds, cfg.more_data, cfg.seed)
    pyramid = "-pyramid-" + "-".join(cfg.scales) if cfg.scales else ""
    name = cfg.name or f"{Path(cfg.data).name}-t{cfg.frames}s{cfg.stride}{pyramid}-{cfg.aug}"
    out = Path(cfg.out) / name
    out.mkdir(parents=True, exist_ok=True)
    spec = spec_for(cfg, ds.classes)
    warn_about(name, cfg, ds, spec)
    dl = loaders(cfg, ds, spec, member)
    log.info(
        "%s: %d training, %d validation, %d test videos; %s",
        name,
        len(ds.train),
        len(ds.val),
        len(ds.test),
        dl.flip.describe(),
    )
    return Run(name, out, ds, spec, dl)


def network(cfg: TrainConfig, run: Run, pretrained: str | None) -> torch.nn.Module:
    """The run's network, its conv weights laid out channels-last: oneDNN's convolutions then
    skip a layout change at every layer (MobileNetV3-small, T=3, 160 px, batch 32 on 2 cores:
    1.3-1.4x the samples a second; bench/test_train_bench.py). Only the memory layout
    differs: checkpoints load into and export from a default-layout network as before."""
    net = build(
        cfg.arch,
        cfg.frames,
        len(run.ds.classes),
        inflation=cfg.inflation,
        pretrained=pretrained or None,
        stem_bn=cfg.stem_bn,
        size=cfg.hw,
        input_mode=cfg.input_mode,
        scales=len(run.spec.inputs),
        classes=run.ds.classes,
    )
    return net.to(memory_format=torch.channels_last)


def fit(cfg: TrainConfig) -> dict:
    """One run; with ``--soup N``, N members in OUT/NAME/memberI and the average of their
    weights as OUT/NAME/best.pt (models/soup.py), validated and tested on the same splits."""
    if cfg.soup == 1:
        return train(cfg)
    run = prepare(cfg)
    members = [
        train(replace(cfg, soup=1, name=f"{run.name}/member{i}"), member=i) for i in range(cfg.soup)
    ]
    best = run.out / "best.pt"
    paths = [Path(cfg.out) / m["name"] / "best.pt" for m in members]
    device = device_for(cfg)
    model = network(cfg, run, None).to(device)
    soup.mix(paths, best, cfg.to_dict())
    model.load_state_dict(torch.load(best, map_location=device, weights_only=True)["model"])
    val, test = (
        split_metrics(model, loader, run.dl, run.ds.classes, device) if loader else None
        for loader in (run.dl.val, run.dl.test)
    )
    log.info("%s: soup of %d members: val top-1 %.3f", run.name, cfg.soup, val["top1"])
    return write_results(run, cfg, [], soup.stopped(members), test, members[0]["start"], val)


def train(cfg: TrainConfig, member: int = 0) -> dict:
    torch.manual_seed(cfg.seed + member)
    device = device_for(cfg)
    run = prepare(cfg, member)
    name, out, ds, spec, dl = run
    model = network(cfg, run, cfg.pretrained).to(device)
    opt = optimizer(cfg, model)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule(cfg, len(dl.train)))
    history, start = [], 0
    if cfg.resume and (out / "last.pt").is_file():
        start, history, began = resume(out / "last.pt", spec, model, opt, sched)
    else:
        began = start_metrics(cfg.pretrained, model, dl, ds.classes, device)
    stop = Stopper(
        cfg.patience, cfg.time_limit * 60.0, AFTER + 1 if cfg.action_top and dl.alerts else 1
    )
    for row in history:
        stop.update(row["epoch"], row.get("choice", row["top1"]), row["val_loss"])
    amp = device.type == "cuda"
    scaler = torch.amp.GradScaler(enabled=amp)
    reason = f"epochs: all {cfg.epochs} run"
    for epoch in range(start, cfg.epochs):
        dl.train.dataset.epoch = epoch
        chosen = None
        if cfg.action_top and epoch >= AFTER:
            chosen = choose(model, dl.train.dataset, cfg.action_top, device, cfg.batch)
            if chosen:
                log.info("epoch %d: %s", epoch + 1, describe(chosen))
        desc = f"{name} {epoch + 1}/{cfg.epochs}"
        row = run_epoch(model, dl.train, (opt, sched), scaler, amp, device, desc)
        cm, val_loss, auc = evaluate(
            model, dl.val, len(ds.classes), dl.video_level, device, dl.alerts
        )
        row.update(epoch=epoch + 1, val_loss=val_loss, **summary(cm, ds.classes))
        if auc is not None:
            row.update(alert_auc=auc, choice=(row["top1"] + auc) / 2)
        if chosen:
            row["action_windows"] = chosen["kept"]
        history.append(row)
        log.info(
            "epoch %d: loss %.3f, val loss %.3f, val top1 %.3f, macro-F1 %.3f, %.0f samples/s%s",
            epoch + 1,
            row["loss"],
            val_loss,
            row["top1"],
            row["macro_f1"],
            row["samples_per_s"],
            "" if auc is None else f", alert AUC {auc:.3f}",
        )
        state = {
            "model": model.state_dict(),
            "spec": spec.to_json(),
            "config": json.dumps(cfg.to_dict()),
            "epoch": epoch + 1,
        }
        if stop.update(epoch + 1, row.get("choice", row["top1"]), val_loss):
            torch.save(state, out / "best.pt")
        resumable = {
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "history": json.dumps(history),
            "start": json.dumps(began),
        }
        torch.save({**state, **resumable}, out / "last.pt")
        why = stop.reason(epoch + 1 < cfg.epochs)
        if why:
            reason = why
            break
    log.info("%s: stopped after epoch %d: %s", name, len(history), reason)
    test = held_out_metrics(out / "best.pt", model, dl, ds.classes, device)
    stopped = {
        "reason": reason,
        "epochs_run": len(history),
        "best_epoch": stop.best_epoch,
        "chosen_on": "val top-1 and alert AUC" if dl.alerts else "val top-1",
    }
    return write_results(run, cfg, history, stopped, test, began)


def device_for(cfg: TrainConfig) -> torch.device:
    if cfg.device != "auto":
        return torch.device(cfg.device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def run_epoch(model, loader, steppers, scaler, amp: bool, device, desc: str) -> dict:
    """One pass over ``loader``; ``steppers`` is (optimizer, scheduler)."""
    opt, sched = steppers
    model.train()
    seen = correct = 0
    total_loss, t0 = 0.0, time.perf_counter()
    bar = tqdm(loader, desc=desc, leave=False, file=sys.stderr, disable=None)
    for x, y in bar:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.type, enabled=amp):
            logits = model(x)
            loss = backwards.loss(logits, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sched.step()
        seen += len(y)
        correct += backwards.correct(logits, y)
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


def resume(path: Path, spec: HyperframeSpec, model, opt, sched) -> tuple[int, list, dict | None]:
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    old = HyperframeSpec.from_json(ckpt["spec"])
    if old.classes != spec.classes:
        raise BadData(
            f"{path}: cannot resume: it was trained on classes {list(old.classes)}, this dataset has {list(spec.classes)}; use a new --name"
        )
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    return ckpt["epoch"], json.loads(ckpt["history"]), json.loads(ckpt.get("start", "null"))


def _named(cfg: TrainConfig, suffix: str) -> str:
    """A baseline's run name: the main run's with ``suffix``, or the default name (which
    already says T and stride) when the main run has none."""
    return f"{cfg.name}{suffix}" if cfg.name else ""


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        cfg = parse(argv)
        results = [fit(cfg)]
        if cfg.baseline and cfg.scales:  # the pyramid against its own first scale alone
            results.append(fit(replace(cfg, scales=(), name=_named(cfg, "-single"))))
        if cfg.baseline and cfg.frames > 1:
            results.append(
                fit(replace(cfg, frames=1, stride=1, scales=(), name=_named(cfg, "-t1")))
            )
    except (WorkstationError, FileNotFoundError, ValueError) as e:
        print(f"models.train: error: {e}", file=sys.stderr)
        return 2
    for r in results:
        test = (
            "no test split"
            if r["test"] is None
            else (f"test top-1 {r['test_top1']:.3f}, macro-F1 {r['test']['macro_f1']:.3f}")
        )
        began = (r["start"] or {}).get("test")  # a fine-tune: what its epochs added
        if began:
            test += f" (starting weights {began['top1']:.3f})"
        kept = r["stopped"]["best_epoch"] or f"soup of {len(r['stopped']['members'])}"
        print(
            f"{r['name']}: val top-1 {r['best_top1']:.3f} (epoch {kept}), "
            f"{test}; stopped: {r['stopped']['reason']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
