"""An alert that cannot happen backwards (``--backwards``): its windows played in reverse are
taught as "not that class".

A user's folder holds falls, walks, waves; the camera also sees people get up, sit up and rise
from a crouch, which no folder holds. Closed-set training has to put those windows in some class,
and the nearest in motion is the fall (the same figure, the same drop, the other way). A fall
played backwards is someone getting up, so each alert class gets a second share of draws: its
own windows reversed, labelled ``-1 - c`` (models.dataset.TrainSet), whose loss is
``-log(1 - p_c)``: lower the alert's probability, and say nothing about which other class it is.
A still window reads the same both ways: the fall's evidence has to be its direction.
"""

from __future__ import annotations

import torch


def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over labels ``y >= 0``, ``-log(1 - p_c)`` over labels ``-1 - c``."""
    ahead = y >= 0
    ce = torch.nn.functional.cross_entropy(logits, y.clamp(min=0), reduction="none")
    c = (-1 - y).clamp(min=0)
    rest = logits.float().scatter(1, c[:, None], float("-inf"))
    not_c = torch.logsumexp(logits.float(), 1) - torch.logsumexp(rest, 1)
    return torch.where(ahead, ce.float(), not_c).mean()


def correct(logits: torch.Tensor, y: torch.Tensor) -> int:
    """Samples right: the label for ``y >= 0``, anything but ``c`` for ``-1 - c``."""
    top = logits.argmax(1)
    return int(torch.where(y >= 0, top == y, top != -1 - y).sum())
