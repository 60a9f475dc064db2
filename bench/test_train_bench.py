"""The trainer's training step against the same network in the default memory layout.

The trainer lays its network's conv weights out channels-last (``models.train.network``), so that
oneDNN's convolutions skip a layout change at every layer. Both sides run the trainer's own
``run_epoch`` on the realtime-cpu recipe's shape (MobileNetV3-small, T=3, 160 px, batch 32, input
``diff``, AdamW), on the same random batches, in interleaved rounds. Workstation extra: skipped
where torch or timm is absent (a device install).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from bench.gates import Verdicts, median_ratio

torch = pytest.importorskip("torch", reason="the trainer needs torch (workstation extra)")
pytest.importorskip("timm", reason="the trainer needs timm (workstation extra)")

from models import train  # noqa: E402  (after the skip: it imports torch)
from models.config import parse  # noqa: E402

ROUNDS = 5
BATCHES = 3  # steps a round, each side
CLASSES = ("walk_left", "walk_right", "wave", "hold", "fall", "lie_down", "lying", "other")


def test_trainer_step_against_the_default_layout(benchmark, extra):
    torch.manual_seed(0)
    cfg = parse(["--data", "unused", "--recipe", "realtime-cpu"])
    run = SimpleNamespace(ds=SimpleNamespace(classes=CLASSES), spec=SimpleNamespace(inputs=(0,)))
    trainer = train.network(cfg, run, None)
    default = train.network(cfg, run, None).to(memory_format=torch.contiguous_format)
    nets = {"trainer": trainer, "default": default}
    shape = (cfg.batch, cfg.frames, *cfg.hw, 3)
    batches = [
        (
            torch.randint(0, 256, shape, dtype=torch.uint8),
            torch.randint(0, len(CLASSES), (cfg.batch,)),
        )
        for _ in range(BATCHES)
    ]
    steppers = {}
    for side, net in nets.items():
        opt = train.optimizer(cfg, net)
        steppers[side] = (opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0))
    scaler, cpu = torch.amp.GradScaler(enabled=False), torch.device("cpu")
    rows: dict[str, list[float]] = {"trainer": [], "default": []}

    def timed(side: str) -> float:
        t0 = time.perf_counter()
        train.run_epoch(nets[side], batches, steppers[side], scaler, False, cpu, side)
        return time.perf_counter() - t0

    timed("trainer"), timed("default")  # first calls build oneDNN's primitives
    benchmark.pedantic(
        lambda: rows["trainer"].append(timed("trainer")),
        setup=lambda: rows["default"].append(timed("default")),
        rounds=ROUNDS,
        iterations=1,
    )
    per_s = {side: cfg.batch * BATCHES / min(v) for side, v in rows.items()}
    extra.update({f"{side}_samples_per_s": round(v, 1) for side, v in per_s.items()})
    print(
        f"\nsamples/s, best round: trainer {per_s['trainer']:.0f}, default {per_s['default']:.0f}"
    )
    v = Verdicts()
    v.check(extra, "train_step", median_ratio(rows["trainer"], rows["default"]))
    v.assert_all()
