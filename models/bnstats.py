"""Windows that stand for a training split, and BatchNorm statistics measured again on them.

``balanced``: as many windows per class, and within a class spread evenly from its stillest to
its fastest window. What tells a fall from a lie-down is the rare fast window; a random sample
of a clip is mostly its still lead-in and tail. INT8 calibration sets its activation ranges on
them (export.data), and ``--bn-windows`` its BatchNorm statistics.

``reestimate`` (``--bn-windows N``, once the kept weights are final): BatchNorm's running
statistics are an exponential average over the augmented batches of training, taken while the
weights moved, and a soup's (``--soup``) are its members' averaged, not the averaged network's
own. Measured again on N training windows as the runtime sees them (no augmentation), they are
the kept weights' statistics on what they will be fed (README: A second world, "Statistics
measured again").
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from models.dataset import Windows

BATCH = 32  # windows per forward pass while measuring: the statistics are a plain mean over all


def motion(first: np.ndarray, last: np.ndarray) -> float:
    """How much a hyperframe moves: mean absolute difference of its first and last frames on a
    4x subsampled grid (cheap; enough to rank windows)."""
    a = first[::4, ::4].astype(np.int16)
    return float(np.abs(last[::4, ::4].astype(np.int16) - a).mean())


def balanced(w: Windows, limit: int) -> list[tuple[int, int, int]]:
    """At most ``limit`` windows (clip, start, label) of ``w``: the same number per label, spread
    over each label's range of motion, in a fixed shuffled order (NNCF takes the first ones)."""
    per_class: dict[int, list[tuple[float, int, int]]] = {}
    first, last = int(w.offsets.min()), int(w.offsets.max())  # the window's oldest, newest
    for c, (starts, labels) in enumerate(zip(w.starts, w.labels, strict=True)):
        clip = w.clip(c)
        for s, lab in zip(starts.tolist(), labels.tolist(), strict=True):
            per_class.setdefault(lab, []).append((motion(clip[s + first], clip[s + last]), c, s))
    quota = max(1, limit // max(1, len(per_class)))
    items: list[tuple[int, int, int]] = []
    for lab, cands in sorted(per_class.items()):
        cands.sort()
        picks = np.unique(np.linspace(0, len(cands) - 1, min(quota, len(cands))).round())
        items += [(cands[int(i)][1], cands[int(i)][2], lab) for i in picks]
    order = np.random.default_rng(0).permutation(len(items))
    return [items[i] for i in order]


@torch.no_grad()
def reestimate(model: nn.Module, w: Windows, limit: int, device: torch.device) -> int:
    """Replace every BatchNorm's running mean and variance in ``model`` by their plain average
    over ``balanced(w, limit)``'s windows; the rest of the model runs as in evaluation (dropout
    off). Returns how many windows were seen (0: the model has no BatchNorm, left as it was)."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    items = balanced(w, limit) if norms else []
    if not items:
        return 0
    model.eval()
    saved = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: every window counts alike
        m.train()
    try:
        for i in range(0, len(items), BATCH):
            x = np.stack([w.window(c, s) for c, s, _ in items[i : i + BATCH]])
            model(torch.from_numpy(x).to(device))
    finally:
        for m, momentum in zip(norms, saved, strict=True):
            m.momentum = momentum
        model.eval()
    return len(items)
