"""Classification metrics from a confusion matrix (rows: truth, columns: prediction)."""

from __future__ import annotations

import numpy as np


def confusion(truth: np.ndarray, pred: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(truth * n + pred, minlength=n * n).reshape(n, n)


def summary(cm: np.ndarray, classes: tuple[str, ...]) -> dict:
    tp = np.diag(cm).astype(float)
    precision = np.divide(tp, cm.sum(0), out=np.zeros_like(tp), where=cm.sum(0) > 0)
    recall = np.divide(tp, cm.sum(1), out=np.zeros_like(tp), where=cm.sum(1) > 0)
    f1 = np.divide(
        2 * precision * recall,
        precision + recall,
        out=np.zeros_like(tp),
        where=precision + recall > 0,
    )
    present = cm.sum(1) > 0
    return {
        "top1": float(tp.sum() / max(cm.sum(), 1)),
        "macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        "per_class": {
            c: {"precision": float(p), "recall": float(r)}
            for c, p, r in zip(classes, precision, recall, strict=True)
        },
        "confusion": cm.tolist(),
    }
