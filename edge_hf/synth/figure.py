"""Pixels for :mod:`edge_hf.synth` (numpy/OpenCV only): the figure's pose and drawing, and the
static scenery (background, sensor-noise tiles, camera shake) made once per scene.

The figure is a featureless stick-and-blob person: round head, elliptic torso, straight arms and
two-segment legs, all in one colour. It has no nose, no feet and no elbows, so a side-on walker
facing left and one facing right draw the same set of silhouettes: the gait is symmetric and only
its motion across frames tells the direction.

A :class:`Pose` is a handful of angles plus the feet position; :func:`draw` turns it into cv2
primitives drawn in place, with 4 bits of sub-pixel precision so slow motion stays smooth.
Besides walking and toppling, poses for the hard negatives of the ``real`` preset: crouching,
bending over, sitting on the floor and kneeling; :func:`blend` moves between any two poses.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import atan2, cos, degrees, hypot, pi, sin
from typing import NamedTuple

import cv2
import numpy as np

# Proportions as fractions of the standing height (feet to top of head, about 1.0 in total).
HEAD_R = 0.075
NECK_GAP = 0.02
TORSO = 0.33
TORSO_HALF_W = 0.065
SHOULDER_DROP = 0.04
THIGH = 0.245
SHIN = 0.245
ARM = 0.36
ARM_REST = 0.15  # radians each arm hangs away from the body axis when standing
ARM_SWING = 0.8  # arm swing as a fraction of leg swing while walking
KNEE_BEND = 0.7  # radians of knee bend half-way down a fall or lie-down
REACH = 1.1  # radians both arms reach towards the floor half-way down

_SHIFT = 4  # cv2 fixed-point bits
_ONE = 1 << _SHIFT


class Pose(NamedTuple):
    """One frame of the figure. Angles in radians; arm angles are from hanging straight down along
    the body axis, positive towards +x (image right) when upright."""

    x: float  # feet (pivot) position, pixels
    tilt: float = 0.0  # 0 upright .. pi/2 lying on the floor
    side: float = 1.0  # +1 topples/knees towards +x, -1 towards -x
    swing: float = 0.0  # leg A at +swing, leg B at -swing
    knee: float = 0.0  # knee bend towards `side`
    arm_a: float = ARM_REST
    arm_b: float = -ARM_REST
    hip: float = 0.0  # both thighs raised towards `side` (sitting: pi/2; kneeling: negative)
    lean: float = 0.0  # torso, head and arms turned about the hip towards `side`


@dataclass(frozen=True)
class Body:
    """The figure's size, colour and where the floor is, in pixels. ``color`` is the legs' (and
    everything's, unless ``upper`` colours the torso and arms and ``head`` the head)."""

    height: float
    thickness: int
    color: tuple[int, int, int]
    floor_y: float
    upper: tuple[int, int, int] | None = None
    head: tuple[int, int, int] | None = None


def standing(x: float) -> Pose:
    return Pose(x)


def walking(x: float, phase: float, amplitude: float) -> Pose:
    """Straight-legged symmetric gait: the mirror image of any pose is another pose of the cycle."""
    s = amplitude * sin(phase)
    return Pose(x, swing=s, arm_a=ARM_REST - ARM_SWING * s, arm_b=-ARM_REST + ARM_SWING * s)


def toppling(x: float, side: float, g: float) -> Pose:
    """Pose at progress g (0 standing .. 1 lying) along the one path that falls, lie-downs and
    get-ups all share, so that a single frame cannot tell them apart: only the timing differs."""
    bend = sin(pi * g)
    reach = side * REACH * bend
    return Pose(
        x,
        tilt=0.5 * pi * g,
        side=side,
        knee=KNEE_BEND * bend,
        arm_a=ARM_REST + reach,
        arm_b=-ARM_REST + reach,
    )


def blend(a: Pose, b: Pose, t: float) -> Pose:
    """The pose a fraction t (0..1) of the way from a to b, every field linearly."""
    return Pose(*(u + (v - u) * t for u, v in zip(a, b, strict=True)))


def crouching(x: float, side: float, d: float) -> Pose:
    """Knees bent towards `side`, leaning forward, arms forward; d 0 standing .. 1 deep crouch."""
    return Pose(
        x,
        side=side,
        knee=1.15 * d,
        lean=0.45 * d,
        arm_a=ARM_REST + side * 0.9 * d,
        arm_b=-ARM_REST + side * 1.1 * d,
    )


def bending(x: float, side: float, d: float) -> Pose:
    """Bent over at the hip towards `side`, hands going to the floor; d 0 standing .. 1 down."""
    lean = 1.35 * d
    return Pose(
        x,
        side=side,
        knee=0.3 * d,
        lean=lean,
        hip=0.1 * d,
        arm_a=ARM_REST * (1 - d) + side * (lean - 0.05),
        arm_b=-ARM_REST * (1 - d) + side * (lean + 0.1),
    )


def sitting(x: float, side: float) -> Pose:
    """Sitting on the floor, legs forward towards `side` with the knees up, hands behind."""
    return Pose(
        x,
        side=side,
        hip=0.5 * pi + 0.35,
        knee=0.35,
        lean=-0.2,
        arm_a=-side * 0.45,
        arm_b=-side * 0.3,
    )


def kneeling(x: float, side: float, lean: float = 0.25) -> Pose:
    """On both knees, shins flat behind, torso leaning `lean` towards `side`."""
    return Pose(
        x,
        side=side,
        hip=-0.25 * pi,
        knee=0.25 * pi,
        lean=lean,
        arm_a=ARM_REST + side * 0.6,
        arm_b=-ARM_REST + side * 0.8,
    )


def _limb(ox: float, oy: float, length: float, angle: float) -> tuple[float, float]:
    """End of a segment hanging from (ox, oy) at `angle` from straight down (y up)."""
    return ox + length * sin(angle), oy - length * cos(angle)


def _local_points(h: float, p: Pose) -> list[tuple[float, float]]:
    """Joints in body coordinates (y up, hip at x=0), lowest joint at y=0. Order: hip, neck,
    head centre, shoulder, hand A, hand B, knee A, foot A, knee B, foot B."""
    bend, up = p.side * p.knee, p.side * p.hip
    knee_a = _limb(0.0, 0.0, THIGH * h, p.swing + up + bend)
    foot_a = _limb(*knee_a, SHIN * h, p.swing + up - bend)
    knee_b = _limb(0.0, 0.0, THIGH * h, -p.swing + up + bend)
    foot_b = _limb(*knee_b, SHIN * h, -p.swing + up - bend)
    sh_y = (TORSO - SHOULDER_DROP) * h
    upper = [
        (0.0, TORSO * h),
        (0.0, (TORSO + NECK_GAP + HEAD_R) * h),
        (0.0, sh_y),
        _limb(0.0, sh_y, ARM * h, p.arm_a),
        _limb(0.0, sh_y, ARM * h, p.arm_b),
    ]
    if p.lean:
        c, s = cos(p.lean), p.side * sin(p.lean)
        upper = [(x * c + y * s, y * c - x * s) for x, y in upper]
    legs = [knee_a, foot_a, knee_b, foot_b]
    lift = -min(y for _, y in legs)
    return [(x, y + lift) for x, y in [(0.0, 0.0), *upper, *legs]]


def image_points(body: Body, p: Pose, dx: float, dy: float) -> list[tuple[int, int]]:
    """Joints in cv2 fixed-point image coordinates: tilted about the feet, resting on the floor."""
    h = body.height
    c, s = cos(p.tilt), p.side * sin(p.tilt)
    pts = [(x * c + y * s, y * c - x * s) for x, y in _local_points(h, p)]
    # Rest the lowest drawn extent (a limb's round cap or the head) on the floor line.
    low = min(min(y for _, y in pts), pts[2][1] - HEAD_R * h)
    lift = 0.5 * body.thickness - low
    ox, oy = p.x + dx, body.floor_y + dy
    return [(round((ox + x) * _ONE), round((oy - y - lift) * _ONE)) for x, y in pts]


def bgr(v: np.ndarray) -> tuple[int, int, int]:
    return (int(v[0]), int(v[1]), int(v[2]))


def draw(out: np.ndarray, body: Body, p: Pose, dx: float = 0.0, dy: float = 0.0) -> None:
    """Draw the figure in place on `out`, shifted by (dx, dy) pixels (camera jitter)."""
    hip, neck, head, shoulder, hand_a, hand_b, knee_a, foot_a, knee_b, foot_b = image_points(
        body, p, dx, dy
    )
    col, t, aa = body.color, body.thickness, cv2.LINE_AA
    for a, b in ((hip, knee_a), (knee_a, foot_a), (hip, knee_b), (knee_b, foot_b)):
        cv2.line(out, a, b, col, t, aa, _SHIFT)
    col = body.upper or col
    for hand in (hand_a, hand_b):
        cv2.line(out, shoulder, hand, col, t, aa, _SHIFT)
    cx, cy = (hip[0] + neck[0]) // 2, (hip[1] + neck[1]) // 2
    half = 0.5 * hypot(neck[0] - hip[0], neck[1] - hip[1]) + 0.3 * t * _ONE
    angle = degrees(atan2(neck[1] - hip[1], neck[0] - hip[0]))
    axes = (round(half), round(TORSO_HALF_W * body.height * _ONE))
    cv2.ellipse(out, (cx, cy), axes, angle, 0, 360, col, -1, aa, _SHIFT)
    cv2.circle(out, head, round(HEAD_R * body.height * _ONE), body.head or col, -1, aa, _SHIFT)
