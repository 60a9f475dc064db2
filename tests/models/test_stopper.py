"""Which epoch is kept and when training stops (models.stopper)."""

from __future__ import annotations

import pytest

from models.stopper import Stopper


@pytest.mark.parametrize(
    ("rows", "patience", "stops_after", "best"),
    [
        # (val top-1, val loss) per epoch
        ([(0.5, 1.0), (0.6, 0.9), (0.6, 0.9), (0.6, 0.9)], 2, 4, 2),  # plateau after 2 flat epochs
        ([(0.5, 1.0), (0.6, 0.9), (0.6, 0.8), (0.6, 0.7)], 2, None, 4),  # loss still falling
        ([(0.5, 1.0), (0.5, 1.0), (0.5, 1.0)], 0, None, 1),  # patience 0: never stops
        ([(0.9, 0.5), (0.8, 0.6), (0.95, 0.7), (0.9, 0.6)], 1, 2, 3),  # top-1 decides the best
        ([(0.9, 0.5), (0.9, 0.4), (0.9, 0.45)], 5, None, 2),  # a tie goes to the lower loss
    ],
)
def test_stopper_picks_the_checkpoint_and_detects_the_plateau(rows, patience, stops_after, best):
    s = Stopper(patience, 0.0)
    stopped = None
    for epoch, (top1, loss) in enumerate(rows, 1):
        s.update(epoch, top1, loss)
        if stopped is None and s.reason(more_epochs=True):
            stopped = epoch
    assert stopped == stops_after and s.best_epoch == best
    assert s.reason(more_epochs=False) is None  # the last epoch is "all epochs run"


@pytest.mark.parametrize(
    ("rows", "best"),
    [
        ([(0.9, 0.5), (0.95, 0.4), (0.6, 0.9), (0.8, 0.8), (0.7, 0.7)], 4),  # not before epoch 3
        ([(0.9, 0.5), (0.95, 0.4)], 2),  # stopped before epoch 3: the best of what it has
    ],
)
def test_no_epoch_before_the_windows_are_chosen_is_kept_once_one_after_is(rows, best):
    """With --action-top on alert clips labelled whole, the first epochs train every window of a
    fall clip as the fall: once an epoch from the choice's start is recorded, none before it is
    kept (a fine-tune from a fall model scored best at its second epoch, docs/results.md: starting from a
    fall model)."""
    s = Stopper(0, 0.0, from_epoch=3)
    kept = [epoch for epoch, (top1, loss) in enumerate(rows, 1) if s.update(epoch, top1, loss)]
    assert s.best_epoch == best and kept[-1] == best


def test_a_resumed_run_counts_the_time_it_already_spent():
    """--resume hands the stopper the seconds of the runs it continues: a limit they have
    used up stops after the first epoch of the new invocation."""
    assert Stopper(0, 60.0, spent_s=59.0).reason(more_epochs=True) is None
    assert Stopper(0, 60.0, spent_s=61.0).reason(more_epochs=True).startswith("time limit: 1.0")
    assert Stopper(0, 60.0, spent_s=30.0).elapsed_s() >= 30.0
