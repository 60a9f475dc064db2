"""The spec's alert settings as an export writes them: ``--threshold CLASS=P`` sets thresholds,
``--then`` (or, for a model with a lying class, the automatic fall-then-lying rule) what a class
waits for after it."""

from __future__ import annotations

from dataclasses import replace

from edge_hf.errors import SpecError
from edge_hf.spec import HyperframeSpec, Then, layer_thresholds, unknown_in_then
from models.alerts import bare
from models.errors import BadArguments


def with_then(spec: HyperframeSpec, then: tuple[Then, ...] | None) -> HyperframeSpec:
    """The spec with the classes that wait for a pose after them (``--then``); None (auto): a
    model with a ``lying`` class alerts on ``fall`` only once lying follows it (``Then``'s
    defaults: a score of 0.2 within 1 s; models.evaluation.wait then chooses both for the model)."""
    if then is None:  # the names as the dataset spells them: Fall, LYING, ...
        fall = next((c for c in spec.thresholds if bare(c) == "fall"), None)
        lying = next((c for c in spec.classes if bare(c) == "lying"), None)
        auto = fall is not None and lying is not None
        then = (Then(fall, lying),) if auto else spec.alert_then
    if (problem := unknown_in_then(spec, then, "--then")) is not None:
        raise BadArguments(problem)
    return replace(spec, alert_then=tuple(then))


def with_thresholds(spec: HyperframeSpec, overrides: list[tuple[str, float]]) -> HyperframeSpec:
    """The spec with alert thresholds set or added (``--threshold CLASS=P``)."""
    try:
        thresholds = layer_thresholds(spec, [("--threshold", tuple(overrides))])
    except SpecError as e:
        raise BadArguments(str(e)) from None
    return replace(spec, alert_classes=tuple(thresholds.items()))
