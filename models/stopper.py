"""When training stops, and which epoch is kept (``models.train``)."""

from __future__ import annotations

import math
import time


class Stopper:
    """Chooses the checkpoint (best validation score: top-1, or its mean with the alert AUC,
    models.evaluation.choice; ties: lower validation loss) and says when
    to stop: ``patience`` epochs in a row that improve neither the checkpoint nor the validation
    loss (a plateau), or the time limit. An epoch before ``from_epoch`` is kept only until one
    from it is recorded (epochs that train the alert clips whole, before ``--action-top``
    chooses their windows, are not the recipe's model). ``spent_s``: seconds a resumed run had
    already trained, which count towards the time limit."""

    def __init__(
        self, patience: int, time_limit_s: float, from_epoch: int = 1, spent_s: float = 0.0
    ) -> None:
        self.patience, self.time_limit_s = patience, time_limit_s
        self.t0 = time.monotonic() - spent_s
        self.from_epoch = from_epoch
        self.best = (False, -1.0, math.inf)  # (from from_epoch, top1, val loss) of the checkpoint
        self.best_epoch, self.min_loss, self.since = 0, math.inf, 0

    def update(self, epoch: int, top1: float, val_loss: float) -> bool:
        """Record an epoch; True if it is the new checkpoint."""
        key = (epoch >= self.from_epoch, top1)
        better = key > self.best[:2] or (key == self.best[:2] and val_loss < self.best[2])
        improved = better or val_loss < self.min_loss * (1 - 1e-3)
        self.min_loss = min(self.min_loss, val_loss)
        self.since = 0 if improved else self.since + 1
        if better:
            self.best, self.best_epoch = (*key, val_loss), epoch
        return better

    def elapsed_s(self) -> float:
        """Seconds of training so far, with those of the invocations it resumes."""
        return time.monotonic() - self.t0

    def reason(self, more_epochs: bool) -> str | None:
        if not more_epochs:
            return None
        if self.patience and self.since >= self.patience:
            return (
                f"plateau: no validation improvement in {self.since} epochs "
                f"(best epoch {self.best_epoch})"
            )
        minutes = self.elapsed_s() / 60.0
        if self.time_limit_s and minutes * 60.0 >= self.time_limit_s:
            return f"time limit: {minutes:.1f} of {self.time_limit_s / 60.0:g} minutes used"
        return None
