"""Static scenery of the ``easy`` preset (numpy/OpenCV only), made once per scene: the
background, sensor-noise tiles and the camera-shake offsets. The ``real`` preset builds its own
scenery in :mod:`edge_hf.synth.scene_real` and reuses the noise tiles and the shake."""

from __future__ import annotations

from math import pi, sin
from typing import TYPE_CHECKING

import cv2
import numpy as np

from edge_hf.synth.figure import bgr

if TYPE_CHECKING:
    from edge_hf.synth import SceneParams

NOISE_TILES = 3  # noise tiles cycled over frames, each also offset per frame
NOISE_PAD = 16  # noise tiles are this much larger than the frame, for per-frame offsets


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
