"""What a synthetic action clip shows, frame by frame: the labels ``models.synthdata`` writes to
``annotations.csv`` (and to training stories), which scene each class's clips are, and their
codec."""

from __future__ import annotations

import numpy as np

from edge_hf import synth

MIN_WALK_SPEED = 0.25  # figure heights per second (walks: 0.5-1.4); slower has no direction


def walk_direction(scene: synth.Scene, start: int, end: int) -> str:
    """``walk_left`` / ``walk_right`` for a walk phase of an action clip (a lead-in, a walk on),
    which the clip's own label does not name; ``walk`` when it hardly moves (held at the frame
    edge)."""
    dx = scene.pose(end).x - scene.pose(start).x
    speed = abs(dx) / scene.figure_height * scene.fps / max(1, end - start)
    if speed < MIN_WALK_SPEED:
        return "walk"
    return "walk_left" if dx < 0 else "walk_right"


STILL = (
    "stand",
    "turn",
    "lying",
    "sitting",
    "empty",
)  # with the hard negatives: the real preset's other


def scene_of(action: str, k: int, preset: str) -> str:
    """The scene of clip k of a class: ``other`` (real preset) takes the hard negatives in turn,
    so each is an equal part of it."""
    if preset == "real" and action == "other":
        return synth.HARD_NEGATIVES[k % len(synth.HARD_NEGATIVES)]
    return action


def annotations(action: str, phases, names: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """Where an action clip shows what: a phase that is one of the classes keeps its name (the
    clip's action, a directed walk before or after it, ``lying`` after a fall or a lie-down); the
    hard negatives and the other still parts (standing, sitting; lying too when the classes lack
    it) are ``other`` when the classes have it; a walk with no direction is left out."""
    if action in synth.MIXED_SPEED:  # from the fall on: what follows it is the difference
        first = next(start for _, start, _, phase in phases if phase == "fall")
        return [(first, phases[-1][2], action)]
    rows = []
    for _, start, end, phase in phases:
        if phase in names:
            rows.append((start, end, phase))
        elif phase in (*STILL, *synth.HARD_NEGATIVES) and "other" in names:
            rows.append((start, end, "other"))
    return rows


def clip_codec(codec: str, seed: int) -> str:
    """A clip's codec: ``mixed`` draws H.264 (as the streams and many cameras) or MJPEG from the
    seed, which the look-alike pair shares: the codec says nothing about the class."""
    if codec != "mixed":
        return codec
    return "h264" if np.random.default_rng([seed, 62]).random() < 0.5 else "mjpeg"
