"""Activation ranges chosen for INT8 (always): quantize with each activation-range estimator and keep the one
whose INT8 raises the alerts where the float model does, on the trainer's validation split.

No estimator is right for every model (docs/results.md): min/max over the calibration set keeps
the rare large activations of a fast fall but can spend its 256 steps on one outlier (a
realistic model lost 47 points); a quantile or NNCF's own mean ranges keep top-1 on such models
but clip those activations, and on the demo model NNCF's ranges kept 97.6 % of top-1 while the
fall score never again reached 0.9 (6 of 42 demo falls alerted). Top-1 agreement cannot see
that; the alert threshold can. So each candidate is scored by the alert agreement: for every
alert class, the F1 between the hyperframes where the float model's score reaches a threshold
and those where the INT8 model's does, averaged over three thresholds (0.5, the class's alert
threshold, halfway from it to 1) and over the alert classes. Ties go to top-1 agreement, then
to the earlier candidate (min/max first, the default before this choice).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from edge_hf.inference import activate
from edge_hf.spec import HyperframeSpec

CANDIDATES = ("minmax", "quantile", "nncf")


def scores(spec: HyperframeSpec, logits: np.ndarray) -> np.ndarray:
    """The runtime's scores (its own activation) from a batch of logits."""
    out = np.empty_like(logits, dtype=np.float32)
    activate(
        spec.activation, logits.astype(np.float32), out, np.empty((len(logits), 1), np.float32)
    )
    return out


def thresholds_of(alert: float) -> tuple[float, float, float]:
    return 0.5, alert, (alert + 1) / 2


def alert_agreement(spec: HyperframeSpec, ref: np.ndarray, other: np.ndarray) -> float:
    """F1 of ``other``'s alerting hyperframes against ``ref``'s (scores, not logits), averaged
    over thresholds and alert classes; 1.0 where neither reaches a threshold anywhere."""
    f1s = []
    for cls, alert in spec.alert_classes:
        k = spec.classes.index(cls)
        for t in thresholds_of(alert):
            a, b = ref[:, k] >= t, other[:, k] >= t
            both, total = int((a & b).sum()), int(a.sum() + b.sum())
            f1s.append(1.0 if total == 0 else 2 * both / total)
    return float(np.mean(f1s)) if f1s else 1.0


def judge(spec: HyperframeSpec, ref_logits: np.ndarray, logits: np.ndarray) -> dict[str, float]:
    """One candidate against the float model on the same hyperframes."""
    return {
        "alert_agreement": round(
            alert_agreement(spec, scores(spec, ref_logits), scores(spec, logits)), 4
        ),
        "top1_agreement": round(float((logits.argmax(1) == ref_logits.argmax(1)).mean()), 4),
    }


def best(judged: Mapping[str, Mapping[str, float]]) -> str:
    """The candidate with the highest alert agreement, then top-1 agreement, then listed first."""
    names = list(judged)
    return max(
        names,
        key=lambda n: (judged[n]["alert_agreement"], judged[n]["top1_agreement"], -names.index(n)),
    )
