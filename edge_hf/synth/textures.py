"""Procedural textures for the ``real`` preset's scenery (numpy/OpenCV only, no photographs):
value noise, bricks or tiles, stripes, gradients and blotches, each a (H, W, 3) uint8 BGR image
drawn from a numpy Generator. Made once per scene, never per frame."""

from __future__ import annotations

import cv2
import numpy as np

KINDS: tuple[str, ...] = ("noise", "bricks", "tiles", "stripes", "gradient", "blotches")


def muted_colors(rng: np.random.Generator, k: int) -> np.ndarray:
    """k related colours: one base grey level with a muted tint, varied a little (walls and
    floors are rarely saturated)."""
    tint = rng.normal(0, 1, 3)
    base = rng.uniform(20, 235) + rng.uniform(0, 45) * tint / max(np.linalg.norm(tint), 1e-6)
    spread = rng.uniform(8, 50)
    return np.clip(base + rng.normal(0, spread, (k, 3)), 0, 255).astype(np.float32)


def value_noise(rng: np.random.Generator, h: int, w: int, octaves: int = 4) -> np.ndarray:
    """Smooth random field in 0..1, a sum of upsampled random grids (coarse to fine)."""
    acc = np.zeros((h, w), np.float32)
    amp, total = 1.0, 0.0
    cells = int(rng.integers(2, 6))
    for _ in range(octaves):
        grid = rng.random((cells + 1, cells * w // max(h, 1) + 2)).astype(np.float32)
        acc += amp * cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)
        total += amp
        amp *= 0.5
        cells *= 2
    acc /= total
    lo, hi = float(acc.min()), float(acc.max())
    return (acc - lo) / max(hi - lo, 1e-6)


def _noise(rng, h, w) -> np.ndarray:
    c = muted_colors(rng, 2)
    t = value_noise(rng, h, w, int(rng.integers(2, 6)))[..., None]
    return c[0] + (c[1] - c[0]) * t


def _bricks(rng, h, w, tiles: bool = False) -> np.ndarray:
    c = muted_colors(rng, 2)
    mortar = np.clip(c[0] * rng.uniform(0.4, 1.6), 0, 255)
    bh = int(rng.uniform(0.04, 0.14) * h) + 3
    bw = bh * (1 if tiles else int(rng.integers(2, 4))) + int(rng.integers(0, 3))
    gap = max(1, int(bh * rng.uniform(0.06, 0.2)))
    img = np.empty((h, w, 3), np.float32)
    img[:] = mortar
    for row, y in enumerate(range(0, h, bh)):
        shift = 0 if tiles else (row % 2) * bw // 2
        for x in range(-shift, w, bw):
            col = c[1] + rng.normal(0, 12, 3)
            img[y + gap : y + bh, max(0, x + gap) : max(0, x + bw)] = col
    return img


def _stripes(rng, h, w) -> np.ndarray:
    c = muted_colors(rng, 2)
    period = rng.uniform(0.03, 0.25) * w
    angle = rng.uniform(0, np.pi)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    phase = (xx * np.cos(angle) + yy * np.sin(angle)) / period
    t = (0.5 + 0.5 * np.sin(2 * np.pi * phase))[..., None]
    if rng.random() < 0.5:
        t = (t > 0.5).astype(np.float32)
    return c[0] + (c[1] - c[0]) * t


def _gradient(rng, h, w) -> np.ndarray:
    c = muted_colors(rng, 2)
    angle = rng.uniform(0, 2 * np.pi)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    t = xx / w * np.cos(angle) + yy / h * np.sin(angle)
    t = ((t - t.min()) / max(float(np.ptp(t)), 1e-6))[..., None]
    return c[0] + (c[1] - c[0]) * t


def _blotches(rng, h, w) -> np.ndarray:
    c = muted_colors(rng, 3)
    img = np.empty((h, w, 3), np.float32)
    img[:] = c[0]
    for _ in range(int(rng.integers(6, 30))):
        center = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        axes = (int(rng.uniform(0.02, 0.2) * w) + 1, int(rng.uniform(0.02, 0.2) * h) + 1)
        col = c[1 + int(rng.integers(2))] + rng.normal(0, 10, 3)
        cv2.ellipse(img, center, axes, float(rng.uniform(0, 180)), 0, 360, col.tolist(), -1)
    k = int(rng.uniform(0.005, 0.03) * w) * 2 + 1
    return cv2.GaussianBlur(img, (k, k), 0)


def texture(rng: np.random.Generator, h: int, w: int, kind: str | None = None) -> np.ndarray:
    """A (h, w, 3) uint8 texture of `kind` (one of KINDS; default: drawn from rng), with a
    little value noise over it so no surface is perfectly flat."""
    kind = kind or KINDS[int(rng.integers(len(KINDS)))]
    make = {
        "noise": _noise,
        "bricks": _bricks,
        "tiles": lambda r, a, b: _bricks(r, a, b, True),
        "stripes": _stripes,
        "gradient": _gradient,
        "blotches": _blotches,
    }[kind]
    img = make(rng, h, w)
    grain = value_noise(rng, h, w, 3)[..., None] - 0.5
    img = img + rng.uniform(0, 40) * grain
    return np.clip(img, 0, 255).astype(np.uint8)
