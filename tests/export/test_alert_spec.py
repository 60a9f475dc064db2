"""export.alert_spec: the classes that wait for a pose (``--then``)."""

from __future__ import annotations

import pytest

from edge_hf.spec import HyperframeSpec, Then
from export.alert_spec import with_then
from models.errors import BadArguments

LYING = HyperframeSpec(3, 1, (32, 32), ("walk", "fall", "lying", "other"), (("fall", 0.8),))
EASY = HyperframeSpec(3, 1, (32, 32), ("walk", "fall", "lie_down"), (("fall", 0.8),))


def test_auto_a_model_with_a_lying_class_waits_for_it_after_a_fall():
    assert with_then(LYING, None).alert_then == (Then("fall", "lying", 0.2, 1.0),)
    assert with_then(EASY, None).alert_then == ()  # no lying class: alerts on the fall alone
    no_fall = HyperframeSpec(3, 1, (32, 32), ("walk", "lying"), (("walk", 0.9),))
    assert with_then(no_fall, None).alert_then == ()  # fall is not an alert class
    named = HyperframeSpec(3, 1, (32, 32), ("Walk", "Fall", "LYING"), (("Fall", 0.8),))
    assert with_then(named, None).alert_then == (Then("Fall", "LYING", 0.2, 1.0),)


def test_given_rules_replace_auto_and_must_name_the_models_classes():
    assert with_then(LYING, ()).alert_then == ()  # --then none
    mine = (Then("fall", "other", 0.7, 2.0),)
    assert with_then(LYING, mine).alert_then == mine
    with pytest.raises(BadArguments, match=r"--then fall=lying: the model has no class 'lying'"):
        with_then(EASY, (Then("fall", "lying"),))
