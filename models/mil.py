"""Where the action is in an alert clip labelled whole (``--action-top``): top-k multiple-instance
training.

A user's folder of fall clips says that each clip holds a fall, not which of its windows: the walk
before it, the fall itself or the lying after. Taught whole, the walk is learnt as a fall and
alerts fire on walks. From epoch ``AFTER + 1`` on, the model being trained scores every clip's
windows for the clip's class before each epoch, and only the share ``top`` it scores highest are
drawn as that class in the epoch; the rest are not trained on. The other classes' clips teach a
walk as a walk, so what scores highest in a fall clip is its fall. Annotated clips and clips of
the other classes are untouched.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from models.dataset import TrainSet

AFTER = 2  # epochs trained on every window first: a model that knows nothing picks at random
SCORED = 48  # evenly spaced windows of a clip scored at most; the rest go with the nearest


def spread(n: int, scored: int = SCORED) -> np.ndarray:
    """Window indices scored in a clip of ``n`` windows: all, or ``scored`` evenly spaced."""
    return np.unique(np.linspace(0, n - 1, min(n, scored)).round().astype(int))


def top_windows(n: int, scored: np.ndarray, scores: np.ndarray, top: float) -> np.ndarray:
    """Indices of the ``top`` share (at least one) of ``scored`` windows with the highest
    ``scores``, each with the unscored windows nearest to it, of a clip of ``n`` windows."""
    k = max(1, math.ceil(top * len(scored)))
    best = np.zeros(len(scored), bool)
    best[np.argsort(-scores, kind="stable")[:k]] = True
    idx = np.arange(n)
    nearest = np.abs(idx[:, None] - scored[None, :]).argmin(axis=1)
    return idx[best[nearest]]


def choose(model: torch.nn.Module, ts: TrainSet, top: float, device, batch: int) -> dict | None:
    """Score the windows of every alert clip labelled whole and draw each clip's class among
    its best ``top`` share until the next call. Returns what was chosen (None: no such clip)."""
    w = ts.w
    clips = [c for c, whole in enumerate(w.whole) if whole]
    if not clips:
        return None
    model.eval()
    picks, peaks = {}, []
    with torch.no_grad():
        for c in clips:
            n, cls = len(w.starts[c]), w.video[c]
            scored = spread(n)
            probs = []
            for i in range(0, len(scored), batch):
                x = np.stack([w.window(c, int(w.starts[c][j])) for j in scored[i : i + batch]])
                logits = model(torch.from_numpy(x).to(device)).float()
                probs.append(torch.softmax(logits, 1)[:, cls].cpu().numpy())
            p = np.concatenate(probs)
            picks[c] = top_windows(n, scored, p, top)
            peaks.append(float(p.max()))
    ts.choose(picks)
    kept = sum(len(p) for p in picks.values())
    total = sum(len(w.starts[c]) for c in clips)
    return {"clips": len(clips), "windows": total, "kept": kept, "peak_median": np.median(peaks)}


def describe(chosen: dict) -> str:
    return (
        f"action windows chosen (--action-top): {chosen['kept']} of {chosen['windows']} windows "
        f"of {chosen['clips']} alert clips labelled whole (median of their best scores "
        f"{chosen['peak_median']:.2f})"
    )
