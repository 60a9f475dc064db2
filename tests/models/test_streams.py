"""models/streams.py: what is recorded of each hyperframe on its way to the alert logic."""

from __future__ import annotations

import numpy as np

from edge_hf.alerts import AlertLogic, AlertPolicy
from edge_hf.spec import Then
from models.streams import Tap


def test_two_stage_records_the_pose_a_fall_waits_for_from_the_screen():
    """In two-stage mode the alert logic reads a fall's score from the confirming model and the
    lying it waits for from the screen (edge_hf.alerts): the recorded scores that the sweep
    replays must hold both, or no fall that waits for lying is ever counted as caught."""
    classes = ("walk", "fall", "lying")
    policy = AlertPolicy((("fall", 0.8),), then=(Then("fall", "lying", 0.3, 1.0),))
    tap = Tap(AlertLogic("cam", classes, policy, 25.0))
    fed = np.array([0.0, 0.9, 0.0], np.float32)  # two-stage: the confirming model's fall only
    screen = np.array([0.2, 0.6, 0.2], np.float32)
    tap.update(fed, 0, 0.0, screen)
    tap.update(screen, 1, 0.04)  # one stage: recorded as it is
    np.testing.assert_array_equal(tap.probs[0], np.array([0.2, 0.9, 0.2], np.float32))
    np.testing.assert_array_equal(tap.probs[1], screen)
