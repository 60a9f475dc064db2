"""A uniform model soup: ``--soup N`` trains N members on one split from one start, each with its
own seed (``--seed``, +1, ...: data order, augmentation, draws), and keeps the average of their
weights. Fine-tunes of one start stay in one basin, so their average is a working model that no
seed's draw decides alone, at one model's cost on the device (docs/results.md).

Members trained from scratch do not average (their units are in other orders), so a soup needs
``--pretrained``. BatchNorm's running statistics are averaged with the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from models.errors import BadData


def average(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the members' floating-point tensors; counters (integer tensors,
    such as BatchNorm's batches seen) are the first member's."""
    keys = list(states[0])
    for i, s in enumerate(states[1:], 2):
        if list(s) != keys or any(s[k].shape != states[0][k].shape for k in keys):
            raise BadData(f"soup: member {i}'s weights do not fit member 1's network")
    return {
        k: torch.stack([s[k].float() for s in states]).mean(0).to(states[0][k].dtype)
        if states[0][k].is_floating_point()
        else states[0][k].clone()
        for k in keys
    }


def mix(members: list[Path], out: Path, config: dict) -> dict:
    """Write ``out`` (a best.pt like any run's) from the members' ``best.pt``: their average, the
    soup's own config and the first member's spec (all trained from one config). Returns that
    checkpoint."""
    states = [torch.load(p, map_location="cpu", weights_only=True) for p in members]
    state = {
        "model": average([s["model"] for s in states]),
        "spec": states[0]["spec"],
        "config": json.dumps(config),
        "epoch": 0,  # no epoch of its own: metrics.json names the members' epochs
    }
    torch.save(state, out)
    return state


def stopped(members: list[dict]) -> dict:
    """metrics.json's ``stopped`` of a soup: each member's reason, epoch and scores (member i
    trained with seed ``--seed`` + i on the split of ``--seed``)."""
    return {
        "reason": f"soup of {len(members)} members (the average of their weights)",
        "epochs_run": sum(m["stopped"]["epochs_run"] for m in members),
        "best_epoch": None,
        "members": [
            {
                "name": m["name"],
                "seed": m["config"]["seed"] + i,
                "reason": m["stopped"]["reason"],
                "best_epoch": m["stopped"]["best_epoch"],
                "val_top1": m["best_top1"],
                "test_top1": m["test_top1"],
            }
            for i, m in enumerate(members)
        ],
    }
