"""The alert classes of a dataset: found by name whatever their case or separators, written
into the spec, and what a run is told when they are missing or labelled whole."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import replace

from edge_hf.errors import SpecError
from edge_hf.spec import HyperframeSpec
from models.config import TrainConfig, pyramid_scales
from models.data import empty_folders
from models.errors import BadArguments

log = logging.getLogger("models")


def bare(name: str) -> str:
    """A class name as matched against the names a user gives: lower case, letters and digits
    only (``Fall``, ``FALL`` and ``fall`` alike; ``lie-down`` is ``lie_down``)."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def named(classes: tuple[str, ...], names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The ``classes`` that ``names`` name, whatever their case or separators."""
    wanted = {bare(n) for n in names}
    return tuple(c for c in classes if bare(c) in wanted)


def alert_names(cfg: TrainConfig, classes: tuple[str, ...]) -> tuple[str, ...]:
    """The dataset's classes that ``--abnormal`` names, whatever their case or separators
    (``Fall``, ``FALL`` and ``fall`` alike; ``lie-down`` is ``lie_down``)."""
    return named(classes, cfg.abnormal)


def spec_for(cfg: TrainConfig, classes: tuple[str, ...], fps: float = 0.0) -> HyperframeSpec:
    """The spec a run trains (``fps``: its training videos' frame rate, 0: unknown)."""
    alerts = tuple((c, 0.8) for c in alert_names(cfg, classes))
    try:
        return replace(_spec(cfg, classes, alerts), fps=fps)
    except SpecError as e:
        raise BadArguments(f"{cfg.recipe or 'flags'}: {e}") from None


def _spec(cfg: TrainConfig, classes: tuple[str, ...], alerts) -> HyperframeSpec:
    return HyperframeSpec(
        frames=cfg.frames,
        stride=cfg.stride,
        scales=pyramid_scales(cfg),
        size=cfg.hw,
        classes=classes,
        alert_classes=alerts,
        arch=cfg.arch,
        provenance=(("data", str(cfg.data)), ("recipe", cfg.recipe or "flags")),
    )


def warn_about(name: str, cfg: TrainConfig, ds, spec: HyperframeSpec) -> None:
    """Empty class folders, no alert class at all, or alert clips labelled whole: each trains
    a model that alerts badly, and none stops a run."""
    if empty := empty_folders(ds.root):
        log.warning(
            "%s: folders of %s with no videos, left out: %s", name, ds.root, ", ".join(empty)
        )
    if not spec.alert_classes:
        log.warning(
            "%s: no class is named %s (classes: %s): the model will raise no alert; name its "
            "alert classes with --abnormal CLASS [CLASS ...]",
            name,
            " or ".join(cfg.abnormal),
            ", ".join(ds.classes),
        )
    alerts = {ds.classes.index(c) for c, _ in spec.alert_classes}
    whole = Counter(
        ds.classes[v.labels] for v in ds.train if isinstance(v.labels, int) and v.labels in alerts
    )
    if whole and cfg.action_motion:
        log.info(
            "%s: %s training clips are labelled whole: their windows that move less than %.2f "
            "of the way from the clip's stillest to its busiest are left out (--action-motion)",
            name,
            " and ".join(f"{n} {c}" for c, n in sorted(whole.items())),
            cfg.action_motion,
        )
    elif whole:
        log.warning(
            "%s: %s training clips are labelled whole (no annotations.csv): the moments before "
            "and after the action (walking, lying) are taught as %s too, so alerts come late or "
            "on people lying still; annotations.csv (video,start_frame,end_frame,label) says "
            "where each action is, or --action-motion 0.15 leaves out their still windows "
            "(docs/training.md)",
            name,
            " and ".join(f"{n} {c}" for c, n in sorted(whole.items())),
            " and ".join(sorted(whole)),
        )
