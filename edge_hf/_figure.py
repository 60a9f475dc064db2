"""Pixels for :mod:`edge_hf.synth` (numpy/OpenCV only): the figure's pose and drawing, and the
static scenery (background, sensor-noise tiles, camera shake) made once per scene.

The figure is a featureless stick-and-blob person: round head, elliptic torso, straight arms and
two-segment legs, all in one colour. It has no nose, no feet and no elbows, so a side-on walker
facing left and one facing right draw the same set of silhouettes: the gait is symmetric and only
its motion across frames tells the direction.

A :class:`Pose` is a handful of angles plus the feet position; :func:`draw` turns it into cv2
primitives drawn in place, with 4 bits of sub-pixel precision so slow motion stays smooth.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import atan2, cos, degrees, hypot, pi, sin
from typing import TYPE_CHECKING, NamedTuple

import cv2
import numpy as np

if TYPE_CHECKING:
    from edge_hf.synth import SceneParams

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
NOISE_TILES = 3  # noise tiles cycled over frames, each also offset per frame
NOISE_PAD = 16  # noise tiles are this much larger than the frame, for per-frame offsets


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


@dataclass(frozen=True)
class Body:
    """The figure's size, colour and where the floor is, in pixels."""

    height: float
    thickness: int
    color: tuple[int, int, int]
    floor_y: float


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


def _limb(ox: float, oy: float, length: float, angle: float) -> tuple[float, float]:
    """End of a segment hanging from (ox, oy) at `angle` from straight down (y up)."""
    return ox + length * sin(angle), oy - length * cos(angle)


def _local_points(h: float, p: Pose) -> list[tuple[float, float]]:
    """Joints in body coordinates (y up, hip at x=0), lowest foot at y=0. Order: hip, neck,
    head centre, shoulder, hand A, hand B, knee A, foot A, knee B, foot B."""
    bend = p.side * p.knee
    knee_a = _limb(0.0, 0.0, THIGH * h, p.swing + bend)
    foot_a = _limb(*knee_a, SHIN * h, p.swing - bend)
    knee_b = _limb(0.0, 0.0, THIGH * h, -p.swing + bend)
    foot_b = _limb(*knee_b, SHIN * h, -p.swing - bend)
    lift = -min(foot_a[1], foot_b[1])
    sh_y = (TORSO - SHOULDER_DROP) * h
    pts = [
        (0.0, 0.0),
        (0.0, TORSO * h),
        (0.0, (TORSO + NECK_GAP + HEAD_R) * h),
        (0.0, sh_y),
        _limb(0.0, sh_y, ARM * h, p.arm_a),
        _limb(0.0, sh_y, ARM * h, p.arm_b),
        knee_a,
        foot_a,
        knee_b,
        foot_b,
    ]
    return [(x, y + lift) for x, y in pts]


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
    for hand in (hand_a, hand_b):
        cv2.line(out, shoulder, hand, col, t, aa, _SHIFT)
    cx, cy = (hip[0] + neck[0]) // 2, (hip[1] + neck[1]) // 2
    half = 0.5 * hypot(neck[0] - hip[0], neck[1] - hip[1]) + 0.3 * t * _ONE
    angle = degrees(atan2(neck[1] - hip[1], neck[0] - hip[0]))
    axes = (round(half), round(TORSO_HALF_W * body.height * _ONE))
    cv2.ellipse(out, (cx, cy), axes, angle, 0, 360, col, -1, aa, _SHIFT)
    cv2.circle(out, head, round(HEAD_R * body.height * _ONE), col, -1, aa, _SHIFT)


# ----------------------------------------------------------------------------- scenery


def background(p: SceneParams, size: tuple[int, int], pad: int) -> np.ndarray:
    """The static scene, `pad` pixels larger on every side so camera shake can crop it."""
    h, w = size[0] + 2 * pad, size[1] + 2 * pad
    c0, c1 = (np.array(c, np.float32) for c in p.bg_colors)
    bg = np.empty((h, w, 3), np.uint8)
    if p.background == "gradient":
        ramp = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None, None]
        bg[:] = np.rint(c0 + (c1 - c0) * ramp).astype(np.uint8)
        return bg
    bg[:] = p.bg_colors[0]
    if p.background == "flat":
        return bg
    floor_y = pad + round(p.floor * size[0])
    bg[floor_y:] = p.bg_colors[1]
    rng = np.random.default_rng([p.seed, 3])
    for _ in range(p.shapes):
        color = bgr(np.rint(c0 + (c1 - c0) * rng.uniform(0, 1, 3)))
        cx, cy = int(rng.integers(0, w)), int(rng.integers(0, max(1, floor_y)))
        r = int(rng.uniform(0.04, 0.15) * size[0])
        if rng.random() < 0.5:
            cv2.circle(bg, (cx, cy), r, color, -1, cv2.LINE_AA)
        else:
            rw, rh = int(r * rng.uniform(0.5, 2.5)), int(r * rng.uniform(0.5, 2.5))
            cv2.rectangle(bg, (cx - rw, cy - rh), (cx + rw, cy + rh), color, -1)
    return bg


def noise_tiles(p: SceneParams, size: tuple[int, int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(positive, negative) uint8 parts of a few Gaussian noise fields, added/subtracted with
    saturation; each is NOISE_PAD larger than the frame so frames can use offset windows."""
    if p.noise <= 0:
        return []
    rng = np.random.default_rng([p.seed, 5])
    shape = (size[0] + NOISE_PAD, size[1] + NOISE_PAD, 3)
    tiles = []
    for _ in range(NOISE_TILES):
        n = np.rint(rng.standard_normal(shape, np.float32) * p.noise)
        tiles.append((np.clip(n, 0, 255).astype(np.uint8), np.clip(-n, 0, 255).astype(np.uint8)))
    return tiles


def shake(p: SceneParams, n: int, fps: float) -> list[tuple[int, int]]:
    """Per-frame integer camera offset: two incommensurate sines per axis, seed-phased."""
    if p.jitter <= 0:
        return [(0, 0)] * n
    ph = np.random.default_rng([p.seed, 11]).uniform(0, 2 * pi, 4)
    out = []
    for i in range(n):
        t = 2 * pi * i / fps
        jx = 0.6 * sin(0.9 * t + ph[0]) + 0.4 * sin(2.3 * t + ph[1])
        jy = 0.6 * sin(0.7 * t + ph[2]) + 0.4 * sin(1.9 * t + ph[3])
        out.append((round(p.jitter * jx), round(p.jitter * jy)))
    return out
