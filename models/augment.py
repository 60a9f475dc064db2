"""Augmentation of a whole hyperframe: one random-resized-crop box, one flip and one
brightness/contrast draw, applied to every frame. ``per-frame`` draws anew for each frame: the
broken variant, kept for the ablation (the seed article saw 61 % vs 78 % top-1 from this alone).

The brightness shift never pushes the hyperframe's darkest or brightest pixel past black or
white (``fit``): a dark figure on a dark floor stays apart from it, as a camera's exposure keeps
its subject in range. Unbounded, any darkening draw (up to 51 grey levels) deeper than the
floor's level clipped both to black, and the ``convertScaleAbs`` used before folded the scene
about black instead (|alpha x + beta|), inverting or erasing the figure."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import cv2
import numpy as np

MODES = ("sync", "per-frame", "none")


@dataclass(frozen=True)
class AugConfig:
    mode: str = "sync"
    scale: tuple[float, float] = (0.6, 1.0)  # crop area, fraction of the frame
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: float = 0.5  # probability of a horizontal flip (when the dataset allows flips)
    brightness: float = 0.2  # +- fraction of full scale
    gain: tuple[float, float] = (0.8, 1.2)  # contrast gain, drawn uniformly


@dataclass(frozen=True)
class Draw:
    box: tuple[int, int, int, int]  # y, x, h, w
    flip: bool
    alpha: float  # contrast gain
    beta: float  # brightness offset, grey levels


def draw(rng: np.random.Generator, h: int, w: int, cfg: AugConfig, can_flip: bool) -> Draw:
    for _ in range(10):  # torchvision's RandomResizedCrop sampling
        area = h * w * rng.uniform(*cfg.scale)
        aspect = math.exp(rng.uniform(math.log(cfg.ratio[0]), math.log(cfg.ratio[1])))
        bw, bh = round(math.sqrt(area * aspect)), round(math.sqrt(area / aspect))
        if 0 < bw <= w and 0 < bh <= h:
            box = (int(rng.integers(0, h - bh + 1)), int(rng.integers(0, w - bw + 1)), bh, bw)
            break
    else:
        box = (0, 0, h, w)
    flip = can_flip and rng.random() < cfg.flip
    alpha = rng.uniform(*cfg.gain)
    beta = 255.0 * rng.uniform(-cfg.brightness, cfg.brightness)
    return Draw(box, bool(flip), float(alpha), float(beta))


def apply(frame: np.ndarray, d: Draw, out: np.ndarray) -> None:
    """Crop, resize back to ``out``'s size, flip, brightness/contrast: one frame, in place."""
    y, x, bh, bw = d.box
    cv2.resize(
        frame[y : y + bh, x : x + bw], out.shape[1::-1], dst=out, interpolation=cv2.INTER_LINEAR
    )
    if d.flip:
        cv2.flip(out, 1, dst=out)
    cv2.addWeighted(out, d.alpha, out, 0.0, d.beta, dst=out)  # alpha x + beta, saturated


def fit(d: Draw, lo: int, hi: int) -> Draw:
    """``d`` with its brightness shift bounded so that ``lo`` and ``hi`` (the frames' darkest and
    brightest values) stay within 0..255; when the contrast gain leaves no room, the range is
    centred (both ends clip alike)."""
    low, high = -d.alpha * lo, 255.0 - d.alpha * hi
    beta = min(max(d.beta, low), high) if low <= high else (low + high) / 2
    return replace(d, beta=float(beta))


def augment(
    frames: np.ndarray,
    label: int,
    rng: np.random.Generator,
    cfg: AugConfig,
    flip_map: dict[int, int] | None,
) -> tuple[np.ndarray, int]:
    """``frames`` [T, H, W, 3] uint8 -> a new augmented array and the (possibly flipped) label.
    ``flip_map`` None forbids flips; otherwise a flip turns ``label`` into ``flip_map.get(label,
    label)``, and a -1 there forbids flipping samples of that class (see models.flips)."""
    if cfg.mode == "none":
        return np.array(frames), label
    t, h, w, _ = frames.shape
    out = np.empty_like(frames)
    can_flip = flip_map is not None and flip_map.get(label, label) >= 0
    draws = [draw(rng, h, w, cfg, can_flip)]
    if cfg.mode == "per-frame":
        draws += [draw(rng, h, w, cfg, can_flip) for _ in range(t - 1)]
    lo, hi = int(frames.min()), int(frames.max())
    draws = [fit(d, lo, hi) for d in draws]
    for i in range(t):
        apply(frames[i], draws[min(i, len(draws) - 1)], out[i])
    if draws[0].flip:  # per-frame: the label follows the first frame's flip
        label = flip_map.get(label, label)
    return out, label
