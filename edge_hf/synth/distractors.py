"""Things that move in a ``real`` scene besides the labelled figure (numpy/OpenCV only):
other walkers crossing (smaller and farther, or close by with only the upper body in frame), cars
passing as blobs, a pendulum lamp swinging, and the light (flicker, switched on or off, with a
pool of lamp light). Planned once per scene from a Generator; ``draw``/``apply`` per frame write
in place and allocate no arrays.

Schedules do not depend on what the labelled figure does: clips plan over a fixed horizon
(:data:`CLIP_HORIZON_S`) so a look-alike pair with one seed (fall / lie_down, walk_left /
walk_right ...) sees the same distractors at the same frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import cos, pi, sin
from typing import NamedTuple

import cv2
import numpy as np

from edge_hf.synth import figure as fig

CLIP_HORIZON_S = 8.0  # clips shorter than this plan their distractors over this many seconds
_SHIFT, _ONE = 4, 16  # cv2 fixed-point bits


class Layout(NamedTuple):
    """Where things go in a scene: frame size (H, W), fps, frames planned, the labelled figure's
    floor line and height (px), and the background's padding for camera shake."""

    size: tuple[int, int]
    fps: float
    horizon: int
    floor_y: float
    fig_h: float
    pad: int = 0


def _color(rng: np.random.Generator) -> tuple[int, int, int]:
    return fig.bgr(rng.uniform(0, 255, 3))


@dataclass(frozen=True)
class Walker:
    """Another person crossing the frame: frames [start, start + n), walking at `vx` px/frame."""

    body: fig.Body
    start: int
    n: int
    x0: float
    vx: float
    swing: float
    rate: float  # gait phase per frame

    def draw(self, out: np.ndarray, i: int, dx: int, dy: int) -> None:
        k = i - self.start
        if 0 <= k < self.n:
            pose = fig.walking(self.x0 + self.vx * k, self.rate * k, self.swing)
            fig.draw(out, self.body, pose, dx, dy)


@dataclass(frozen=True)
class Car:
    """A car-shaped blob (body, cabin, two dark wheels) driving across at `vx` px/frame."""

    start: int
    n: int
    x0: float
    vx: float
    road_y: float  # bottom of the wheels
    length: float
    color: tuple[int, int, int]

    def draw(self, out: np.ndarray, i: int, dx: int, dy: int) -> None:
        k = i - self.start
        if not 0 <= k < self.n:
            return
        x, y, ln = self.x0 + self.vx * k + dx, self.road_y + dy, self.length
        h = 0.32 * ln
        r = round(0.11 * ln * _ONE)
        body = (
            (round(x * _ONE), round((y - 1.1 * h) * _ONE)),
            (round((x + ln) * _ONE), round((y - 0.35 * h) * _ONE)),
        )
        cv2.rectangle(out, *body, self.color, -1, cv2.LINE_AA, _SHIFT)
        cabin = (
            (round((x + 0.22 * ln) * _ONE), round((y - 1.75 * h) * _ONE)),
            (round((x + 0.72 * ln) * _ONE), round((y - 1.05 * h) * _ONE)),
        )
        cv2.rectangle(out, *cabin, self.color, -1, cv2.LINE_AA, _SHIFT)
        for wx in (0.2, 0.8):
            c = (round((x + wx * ln) * _ONE), round((y - 0.11 * ln) * _ONE))
            cv2.circle(out, c, r, (20, 20, 20), -1, cv2.LINE_AA, _SHIFT)


@dataclass(frozen=True)
class Pendulum:
    """A lamp on a cord from the ceiling, swinging: angle = amp * sin(w * i + phase)."""

    anchor: tuple[float, float]
    length: float
    amp: float
    w: float
    phase: float
    shade: float  # lamp radius, px
    color: tuple[int, int, int]
    cord: tuple[int, int, int]

    def draw(self, out: np.ndarray, i: int, dx: int, dy: int) -> None:
        a = self.amp * sin(self.w * i + self.phase)
        ax, ay = self.anchor[0] + dx, self.anchor[1] + dy
        ex, ey = ax + self.length * sin(a), ay + self.length * cos(a)
        p0 = (round(ax * _ONE), round(ay * _ONE))
        p1 = (round(ex * _ONE), round(ey * _ONE))
        cv2.line(out, p0, p1, self.cord, 1, cv2.LINE_AA, _SHIFT)
        axes = (round(self.shade * _ONE), round(0.6 * self.shade * _ONE))
        cv2.ellipse(out, p1, axes, -a * 180 / pi, 180, 360, self.color, -1, cv2.LINE_AA, _SHIFT)


def plan_walkers(rng, lay: Layout, rate_per_min: float) -> list[Walker]:
    """Walkers crossing during frames [0, horizon): far (smaller, higher up) or close by (their
    feet below the frame, only the upper body seen), never larger than the labelled figure."""
    (hgt, wid), fps, horizon, floor_y, fig_h = (
        lay.size,
        lay.fps,
        lay.horizon,
        lay.floor_y,
        lay.fig_h,
    )
    count = rng.poisson(rate_per_min * horizon / fps / 60)
    out = []
    for _ in range(count):
        close = rng.random() < 0.25
        if close:
            h = fig_h * rng.uniform(0.8, 1.0)
            floor = hgt + h * rng.uniform(0.35, 0.55)
        else:
            h = fig_h * rng.uniform(0.3, 0.7)
            floor = max(0.3 * hgt, floor_y - rng.uniform(0.1, 0.5) * (floor_y - 0.25 * hgt))
        body = fig.Body(h, max(1, round(rng.uniform(0.035, 0.06) * h)), _color(rng), floor)
        speed = rng.uniform(0.6, 1.3) * h / fps * (1 if rng.random() < 0.5 else -1)
        n = int((wid + h) / abs(speed)) + 1
        x0 = -0.5 * h if speed > 0 else wid + 0.5 * h
        start = int(rng.integers(-n // 2, max(1, horizon)))
        swing = rng.uniform(0.3, 0.45)
        rate = pi * abs(speed) / (2 * (fig.THIGH + fig.SHIN) * h * sin(swing))
        out.append(Walker(body, start, n, x0, speed, swing, rate))
    return out


def plan_cars(rng, lay: Layout, rate_per_min: float) -> list[Car]:
    """Cars on a road line behind the figure, each crossing the frame in 0.7-3 s."""
    (hgt, wid), fps, horizon, floor_y = lay.size, lay.fps, lay.horizon, lay.floor_y
    road = floor_y - rng.uniform(0.15, 0.45) * (floor_y - 0.3 * hgt)
    out = []
    for _ in range(rng.poisson(rate_per_min * horizon / fps / 60)):
        length = rng.uniform(0.15, 0.45) * wid
        speed = (wid + length) / (rng.uniform(0.7, 3.0) * fps) * (1 if rng.random() < 0.5 else -1)
        n = int((wid + 2 * length) / abs(speed)) + 1
        x0 = -length if speed > 0 else float(wid)
        start = int(rng.integers(-n // 2, max(1, horizon)))
        out.append(Car(start, n, x0, speed, road, length, _color(rng)))
    return out


def plan_pendulum(rng, lay: Layout) -> Pendulum:
    (hgt, wid), fps = lay.size, lay.fps
    length = rng.uniform(0.15, 0.5) * hgt
    period = 2 * pi * (length / hgt * 4.0) ** 0.5 * rng.uniform(0.8, 1.2)  # longer swings slower
    return Pendulum(
        anchor=(rng.uniform(0.1, 0.9) * wid, -2.0),
        length=length,
        amp=rng.uniform(0.15, 0.6),
        w=2 * pi / (period * fps),
        phase=rng.uniform(0, 2 * pi),
        shade=rng.uniform(0.03, 0.08) * hgt,
        color=_color(rng),
        cord=_color(rng),
    )


class Lighting:
    """Per-frame light: a gain on the whole frame (flicker; a light switched on or off) and,
    optionally, a pool of lamp light added with a per-frame weight. Both precomputed."""

    def __init__(self, rng, lay: Layout, switch_rate_per_min: float) -> None:
        (hgt, wid), fps, horizon = lay.size, lay.fps, lay.horizon
        t = np.arange(horizon)
        gain = np.full(horizon, rng.uniform(0.85, 1.1))
        if rng.random() < 0.4:  # mains flicker of a cheap lamp, or a slow cloud drift
            gain *= 1 + rng.uniform(0.01, 0.05) * rng.standard_normal(horizon)
        else:
            gain *= 1 + rng.uniform(0.0, 0.15) * np.sin(2 * pi * t / (fps * rng.uniform(4, 20)))
        on = np.ones(horizon)
        for _ in range(rng.poisson(switch_rate_per_min * horizon / fps / 60)):
            at = int(rng.integers(0, horizon))
            on[at:] = 1.0 - on[at]  # toggles: frames from `at` swap state
        dim = rng.uniform(0.45, 0.8)
        self.gain = (gain * np.where(on > 0, 1.0, dim)).tolist()
        self.pool = None
        if rng.random() < 0.5:  # the switched light also throws a pool of light
            yy, xx = np.mgrid[0:hgt, 0:wid].astype(np.float32)
            cx, cy, r = rng.uniform(0, wid), rng.uniform(0, 0.6 * hgt), rng.uniform(0.2, 0.6) * wid
            fall = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))[..., None]
            tint = rng.uniform(0.7, 1.0, 3).astype(np.float32)
            self.pool = np.clip(rng.uniform(30, 90) * fall * tint, 0, 255).astype(np.uint8)
            self.weight = on.tolist()

    def apply(self, out: np.ndarray, i: int) -> None:
        k = i % len(self.gain)
        cv2.convertScaleAbs(out, out, self.gain[k], 0.0)
        if self.pool is not None and self.weight[k] > 0:
            cv2.add(out, self.pool, dst=out)
