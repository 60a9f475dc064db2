"""The synthetic experiment behind the hyperframe claims, in one table.

    python -m models.experiment [--out runs/experiment] [--clips-per-class 40]

On edge_hf.synth data (motion decides, single frames are ambiguous) with the realtime-cpu recipe,
trains: T=3 with synchronized augmentation, T=1 (single frame), and T=3 with per-frame
augmentation; then measures the trainer's throughput against a pure forward/backward step.
Writes ``OUT/experiment.md`` and prints it.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from models.config import parse
from models.model import build
from models.synthdata import write_action_dataset
from models.train import optimizer, train

ROWS = [
    ("T=3, synchronized aug", {}),
    ("T=1 (single frame)", {"frames": 1}),
    ("T=3, per-frame aug", {"aug": "per-frame"}),
]


def pure_step_rate(cfg, classes: int, steps: int = 8) -> float:
    """Samples/s of forward + backward + optimiser step on ready-made tensors: no data loading."""
    model = build(cfg.arch, cfg.frames, classes).train()
    opt = optimizer(cfg, model)
    x = torch.randint(0, 256, (cfg.batch, cfg.frames, cfg.size, cfg.size, 3), dtype=torch.uint8)
    y = torch.randint(0, classes, (cfg.batch,))
    for i in range(steps + 2):
        if i == 2:
            t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return cfg.batch * steps / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/experiment"))
    ap.add_argument("--clips-per-class", type=int, default=40)
    ap.add_argument("--epochs", type=int)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    data = args.out / "synth-data"
    if not (data / "classInd.txt").is_file():
        write_action_dataset(data, args.clips_per_class, (180, 320), seed=0)
    base = parse(["--recipe", "realtime-cpu", "--data", str(data), "--out", str(args.out)])
    if args.epochs:
        base = replace(base, epochs=args.epochs)
    lines = [
        "| run | val top-1 (best) | val macro-F1 | train samples/s | pure step samples/s | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for title, change in ROWS:
        cfg = replace(
            base, name=f"{'-'.join(f'{k}{v}' for k, v in change.items()) or 'hyperframe'}", **change
        )
        result = train(cfg)
        best = max(result["history"], key=lambda r: r["top1"])
        rate = statistics.median(
            r["samples_per_s"] for r in result["history"][1:] or result["history"]
        )
        pure = pure_step_rate(cfg, len(result["classes"]))
        lines.append(
            f"| {title} | {best['top1']:.3f} | {best['macro_f1']:.3f} | {rate:.0f} | {pure:.0f} | {rate / pure:.2f} |"
        )
    table = "\n".join(lines)
    command = "python -m models.experiment " + " ".join(argv if argv is not None else sys.argv[1:])
    (args.out / "experiment.md").write_text(
        f"# Hyperframe experiment\n\n`{command.strip()}`\n\n{table}\n"
    )
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
