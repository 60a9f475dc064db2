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
from models import backwards, distributed, flips, soup
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
    # this rank's share of each epoch's draws, in an order seeded by the epoch (resumable)
    share = distributed.EpochSampler(
        len(train), cfg.seed + member, distributed.rank(), distributed.size()
    )
    return Loaders(
        DataLoader(train, cfg.batch, sampler=share, drop_last=len(share) > cfg.batch, **train_kw),
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
    if distributed.rank() == 0:  # the other ranks write nothing (rank_zero_first: it exists)
        out.mkdir(parents=True, exist_ok=True)
    spec = spec_for(cfg, ds.classes, datasets.frame_rate(ds.train))
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


def fit(cfg: TrainConfig) -> dict | None:
    """One run; with ``--soup N``, N members in OUT/NAME/memberI and the average of their
    weights as OUT/NAME/best.pt (models/soup.py), validated and tested on the same splits.
    Under torchrun every member is trained by all ranks; rank 0 returns the results, the
    others None."""
    if cfg.soup == 1:
        return train(cfg)
    with distributed.rank_zero_first():
        run = prepare(cfg)
    members = [
        train(replace(cfg, soup=1, name=f"{run.name}/member{i}"), member=i) for i in range(cfg.soup)
    ]
    if distributed.rank():
        distributed.barrier()  # rank 0 mixes, validates and tests the soup
        return None
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
    out = write_results(run, cfg, [], soup.stopped(members), test, members[0]["start"], val)
    distributed.barrier()
    return out


def train(cfg: TrainConfig, member: int = 0) -> dict | None:
    """One model, trained by this process or, under torchrun, by all ranks together (rank 0
    validates, keeps checkpoints and writes the results; it returns them, the others None)."""
    torch.manual_seed(cfg.seed + member)
    device = device_for(cfg)
    with distributed.rank_zero_first():  # rank 0 fills the frame cache
        run = prepare(cfg, member)
    name, out, ds, spec, dl = run
    lead = distributed.rank() == 0
    net = network(cfg, run, cfg.pretrained).to(device)
    opt = optimizer(cfg, net)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule(cfg, len(dl.train)))
    amp = device.type == "cuda"
    scaler = torch.amp.GradScaler(enabled=amp)
    last = out / "last.pt"
    # rank 0's last.pt, on every rank: on several machines, only rank 0's has one
    ckpt = distributed.share(read_last(last, spec) if lead and cfg.resume else None) or {}
    if ckpt:
        restore(ckpt, net, (opt, sched, scaler))
    began = ckpt["start"] if ckpt else None
    if not ckpt and lead:
        began = start_metrics(cfg.pretrained, net, dl, ds.classes, device)
    history, start = ckpt.get("history", []), ckpt.get("epoch", 0)
    stop = Stopper(
        cfg.patience,
        cfg.time_limit * 60.0,
        AFTER + 1 if cfg.action_top and dl.alerts else 1,
        ckpt.get("elapsed", 0.0),
    )
    for row in history:
        stop.update(row["epoch"], row.get("choice", row["top1"]), row["val_loss"])
    if ckpt and lead:
        keep_best(out / "best.pt", stop.best_epoch, ckpt)
    model = distributed.wrap(net, device)
    if ckpt:  # the random stream (dropout) where the interrupted run had it
        torch.set_rng_state(ckpt["rng"])
    # a resumed run that had already stopped (plateau, time limit) stops again, before training
    why = distributed.share(stop.reason(start < cfg.epochs) if history else None)
    reason = why or f"epochs: all {cfg.epochs} run"
    for epoch in range(start, cfg.epochs if not why else start):
        dl.train.dataset.epoch = epoch
        dl.train.sampler.set_epoch(epoch)
        chosen = None
        if cfg.action_top and epoch >= AFTER:  # every rank alike: the weights are the same
            chosen = choose(net, dl.train.dataset, cfg.action_top, device, cfg.batch)
            if chosen:
                log.info("epoch %d: %s", epoch + 1, describe(chosen))
        desc = f"{name} {epoch + 1}/{cfg.epochs}"
        row = run_epoch(model, dl.train, (opt, sched), scaler, amp, device, desc)
        why = None
        if lead:
            validate(run, net, row, epoch, device)
            if chosen:
                row["action_windows"] = chosen["kept"]
            history.append(row)
            steppers = {"optimizer": opt, "scheduler": sched, "scaler": scaler}
            save(run, cfg, net, steppers, stop, history, began)
            why = stop.reason(epoch + 1 < cfg.epochs)
        why = distributed.share(why)  # the other ranks wait here for rank 0's decision
        if why:
            reason = why
            break
    if not lead:
        distributed.barrier()  # rank 0 tests the kept weights and writes the results
        return None
    log.info("%s: stopped after epoch %d: %s", name, len(history), reason)
    test = held_out_metrics(out / "best.pt", net, dl, ds.classes, device)
    stopped = {
        "reason": reason,
        "epochs_run": len(history),
        "best_epoch": stop.best_epoch,
        "chosen_on": "val top-1 and alert AUC" if dl.alerts else "val top-1",
    }
    results = write_results(run, cfg, history, stopped, test, began)
    distributed.barrier()
    return results


def validate(run: Run, net, row: dict, epoch: int, device) -> None:
    """Add the validation scores of epoch ``epoch`` (from 0) to its ``row``, and log it."""
    cm, val_loss, auc = evaluate(
        net, run.dl.val, len(run.ds.classes), run.dl.video_level, device, run.dl.alerts
    )
    row.update(epoch=epoch + 1, val_loss=val_loss, **summary(cm, run.ds.classes))
    if auc is not None:
        row.update(alert_auc=auc, choice=(row["top1"] + auc) / 2)
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


def save(run: Run, cfg: TrainConfig, net, steppers: dict, stop: Stopper, history, began) -> None:
    """After an epoch (``history[-1]``): ``last.pt``, everything ``--resume`` needs to go on as
    if never stopped, then ``best.pt`` if the epoch is the new best. Each file is written
    whole or not at all; last.pt comes first, so a kill between the two leaves a last.pt whose
    history names the best epoch, and ``keep_best`` rewrites best.pt from it."""
    row = history[-1]
    state = {
        "model": net.state_dict(),
        "spec": run.spec.to_json(),
        "config": json.dumps(cfg.to_dict()),
        "epoch": row["epoch"],
    }
    better = stop.update(row["epoch"], row.get("choice", row["top1"]), row["val_loss"])
    resumable = {k: v.state_dict() for k, v in steppers.items()}
    resumable.update(
        history=json.dumps(history),
        start=json.dumps(began),
        elapsed=stop.elapsed_s(),
        rng=torch.get_rng_state(),
    )
    _write({**state, **resumable}, run.out / "last.pt")
    if better:
        _write(state, run.out / "best.pt")


def _write(state: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)  # atomic: a run killed while saving keeps the previous file


def keep_best(best: Path, epoch: int, ckpt: dict) -> None:
    """A run killed after writing last.pt and before best.pt: best.pt from last.pt's weights
    when last.pt's epoch is the best one and best.pt is not."""
    kept = torch.load(best, weights_only=True)["epoch"] if best.is_file() else None
    if kept != epoch and epoch == ckpt["epoch"]:
        log.info("%s: epoch %d's weights from last.pt (the run was stopped before)", best, epoch)
        _write({k: ckpt[k] for k in ("model", "spec", "config", "epoch")}, best)


def device_for(cfg: TrainConfig) -> torch.device:
    """``--device``; under torchrun, a bare ``cuda`` is this process's own GPU (LOCAL_RANK)."""
    if cfg.device != "auto":
        device = torch.device(cfg.device)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda" and device.index is None and distributed.size() > 1:
        return torch.device("cuda", distributed.local_rank())
    return device


def run_epoch(model, loader, steppers, scaler, amp: bool, device, desc: str) -> dict:
    """One pass over ``loader``; ``steppers`` is (optimizer, scheduler). Under torchrun the
    loss, accuracy and samples a second are those of all ranks together."""
    opt, sched = steppers
    model.train()
    seen = correct = 0
    total_loss, t0 = 0.0, time.perf_counter()
    quiet = None if distributed.rank() == 0 else True  # None: a bar when stderr is a terminal
    bar = tqdm(loader, desc=desc, leave=False, file=sys.stderr, disable=quiet)
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
    total_loss, correct, seen, took = distributed.epoch_sums(
        total_loss, correct, seen, time.perf_counter() - t0
    )
    return {
        "loss": total_loss / max(seen, 1),
        "train_acc": correct / max(seen, 1),
        "samples_per_s": seen / took,
    }


def read_last(path: Path, spec: HyperframeSpec) -> dict | None:
    """``path`` (a last.pt) to resume from, its history and starting scores decoded; None if
    there is none (a new run)."""
    if not path.is_file():
        return None
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    old = HyperframeSpec.from_json(ckpt["spec"])
    if old.classes != spec.classes:
        raise BadData(
            f"{path}: cannot resume: it was trained on classes {list(old.classes)}, this dataset has {list(spec.classes)}; use a new --name"
        )
    ckpt.setdefault("rng", torch.get_rng_state())  # a last.pt from before it was saved
    log.info("%s: resumed after epoch %d", path, ckpt["epoch"])
    return {
        **ckpt,
        "history": json.loads(ckpt["history"]),
        "start": json.loads(ckpt.get("start", "null")),
    }


def restore(ckpt: dict, net, steppers: tuple) -> None:
    """``read_last``'s checkpoint into ``net`` and ``steppers`` (optimizer, scheduler, grad
    scaler)."""
    net.load_state_dict(ckpt["model"])
    opt, sched, scaler = steppers
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    if ckpt.get("scaler"):
        scaler.load_state_dict(ckpt["scaler"])


def _named(cfg: TrainConfig, suffix: str) -> str:
    """A baseline's run name: the main run's with ``suffix``, or the default name (which
    already says T and stride) when the main run has none."""
    return f"{cfg.name}{suffix}" if cfg.name else ""


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        cfg = parse(argv)
        distributed.start(device_for(cfg).type == "cuda")  # under torchrun: join its ranks
        if distributed.rank():
            log.setLevel(logging.WARNING)  # rank 0 tells the story
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
    finally:
        distributed.stop()
    for r in filter(None, results):  # rank 0's (the other ranks have none to print)
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
