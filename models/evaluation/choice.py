"""The validation pass (``evaluate``), and what the epoch is chosen on when the validation's
alert clips are labelled whole.

Per-video top-1 averages a clip's windows: a fall clip labelled whole is mostly the walk before
the fall and the lying after it, so the top-1 of such clips says little about whether the fall
is seen, and an epoch that calls no fall at all can have the best top-1 (docs/results.md,
fw-other-back-s1: its epoch 6 caught 3 falls of 104 within 2 false alarms an hour, its last 27).
The runtime alerts on a clip's most alarming moment, so each validation video's alert score is
its highest among its windows, and how well that score ranks the alert clips above all the
others (ROC AUC, per alert class, averaged) joins the top-1: the epoch is chosen on their mean.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader

from models.evaluation.metrics import confusion


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """The chance that a random positive scores above a random negative (ties count half)."""
    above = (pos[:, None] > neg[None, :]).mean()
    tied = (pos[:, None] == neg[None, :]).mean()
    return float(above + 0.5 * tied)


def alert_auc(probs: np.ndarray, clips: np.ndarray, truth: np.ndarray, alerts) -> float | None:
    """Mean over ``alerts`` of the ROC AUC of each video's highest window probability of that
    class, its videos against the rest. ``probs``: [windows, classes] softmax; ``clips``: each
    window's video; ``truth``: each window's video class. None: no alert class has videos of
    its own and of others."""
    ids = np.unique(clips)
    video = np.array([truth[clips == i][0] for i in ids])
    out = []
    for a in alerts:
        best = np.array([probs[clips == i, a].max() for i in ids])
        own = video == a
        if own.any() and (~own).any():
            out.append(auc(best[own], best[~own]))
    return float(np.mean(out)) if out else None


def whole_alerts(w, alerts: frozenset[int]) -> tuple[int, ...]:
    """The alert classes with validation clips labelled whole (``Windows``): the epoch is
    chosen with their AUC too. Empty when every alert clip is annotated: top-1 alone."""
    return tuple(sorted({w.video[c] for c, whole in enumerate(w.whole) if whole} & alerts))


def evaluate(
    model: torch.nn.Module,
    loader: DataLoader,
    n: int,
    video_level: bool,
    device: torch.device,
    alerts: tuple[int, ...] = (),
) -> tuple[np.ndarray, float, float | None]:
    """Confusion matrix over videos (logits of a video's windows averaged) or over windows, the
    loss, and the AUC of the ``alerts``' videos by their best windows (module docstring; None:
    not asked for, or not per video)."""
    model.eval()
    logits, truth, clips = [], [], []
    with torch.no_grad():
        for x, y, c in loader:
            logits.append(model(x.to(device)).float().cpu())
            truth.append(y)
            clips.append(c)
    lg, tr, cl = torch.cat(logits), torch.cat(truth).numpy(), torch.cat(clips).numpy()
    loss = float(torch.nn.functional.cross_entropy(lg, torch.from_numpy(tr)))
    ranked = None
    if video_level and alerts:
        ranked = alert_auc(torch.softmax(lg, 1).numpy(), cl, tr, alerts)
    if video_level:
        ids = np.unique(cl)
        lg = torch.stack([lg[torch.from_numpy(cl == i)].mean(0) for i in ids])
        tr = np.array([tr[cl == i][0] for i in ids])
    return confusion(tr, lg.argmax(1).numpy(), n), loss, ranked
