"""The ``real`` preset's scenery and everything drawn around the figure (numpy/OpenCV only).

:class:`RealLayers` is built once per scene from the seed (its own generator streams, so a
look-alike pair with one seed shares every pixel that is not the figure's motion):

- the background: a random crop of a photograph (``photos``: plain uint8 arrays the caller
  passes in, e.g. ``models.backgrounds``; edge_hf never loads any) or a procedural texture
  (:mod:`edge_hf.synth.textures`), often with a separate floor, a few pieces of furniture, then
  brightness, contrast, colour cast, blur and vignetting;
- the figure's colour: high contrast, low contrast against the floor band (dark on dark, light
  on light) or anything at all; sometimes a top of another colour and a face;
- an occluder in front of the figure (a post, a low box, a bush) in some scenes;
- distractors (:mod:`edge_hf.synth.distractors`): walkers, cars, a pendulum lamp, the light;
- a defocus blur of the whole frame in some scenes.

Compression is not drawn here: the dataset writer encodes clips at random JPEG quality or H.264.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from edge_hf.synth import distractors as dis
from edge_hf.synth import textures as tex
from edge_hf.synth.figure import bgr

BGR = tuple[int, int, int]


def photo_crop(rng: np.random.Generator, photo: np.ndarray, h: int, w: int) -> np.ndarray:
    """A random crop of `photo` with the frame's aspect, 35-100 % of the largest such crop,
    maybe mirrored, resized to (h, w, 3)."""
    if photo.ndim == 2:
        photo = cv2.cvtColor(photo, cv2.COLOR_GRAY2BGR)
    ph, pw = photo.shape[:2]
    cw = min(pw, ph * w / h) * rng.uniform(0.35, 1.0)
    ch = cw * h / w
    x0, y0 = rng.uniform(0, pw - cw), rng.uniform(0, ph - ch)
    crop = photo[int(y0) : int(y0 + ch) + 1, int(x0) : int(x0 + cw) + 1]
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    return cv2.resize(np.ascontiguousarray(crop), (w, h), interpolation=cv2.INTER_AREA)


def _surface(rng, photos: Sequence[np.ndarray], h: int, w: int) -> np.ndarray:
    if photos and rng.random() < 0.75:
        return photo_crop(rng, photos[int(rng.integers(len(photos)))], h, w)
    return tex.texture(rng, h, w)


def background(rng, size: tuple[int, int], pad: int, floor_y: float, photos) -> np.ndarray:
    """The static scene, `pad` pixels larger on every side so camera shake can crop it."""
    h, w = size[0] + 2 * pad, size[1] + 2 * pad
    img = _surface(rng, photos, h, w).astype(np.float32)
    if rng.random() < 0.5:  # a floor of its own, meeting the wall a little above the feet
        top = int(pad + floor_y - rng.uniform(0.0, 0.25) * size[0])
        if 0 < top < h:
            floor = _surface(rng, photos, h - top, w).astype(np.float32) * rng.uniform(0.5, 1.1)
            img[top:] = floor
    for _ in range(int(rng.integers(0, 4))):  # furniture against the wall
        fw, fh = rng.uniform(0.05, 0.3) * w, rng.uniform(0.1, 0.45) * size[0]
        x0, bottom = rng.uniform(-0.1, 1.0) * w, pad + floor_y - rng.uniform(0.0, 0.15) * size[0]
        color = tex.muted_colors(rng, 1)[0].tolist()
        cv2.rectangle(img, (int(x0), int(bottom - fh)), (int(x0 + fw), int(bottom)), color, -1)
    img = img * rng.uniform(0.55, 1.35) + rng.uniform(-50, 40)  # contrast, brightness
    img = img * rng.uniform(0.75, 1.25, 3).astype(np.float32)  # colour cast
    if rng.random() < 0.5:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.5, 2.0))
    if rng.random() < 0.3:
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        r2 = ((xx - w / 2) / w) ** 2 + ((yy - h / 2) / h) ** 2
        img *= (1 - rng.uniform(0.3, 1.0) * r2)[..., None]
    return np.clip(img, 0, 255).astype(np.uint8)


def figure_color(rng, bg: np.ndarray, floor_y: float, fig_h: float, pad: int) -> BGR:
    """High contrast, low contrast against the band the figure stands in, or anything."""
    y1 = int(pad + floor_y)
    band = bg[max(0, int(y1 - fig_h)) : max(1, y1)].reshape(-1, 3).astype(np.float32)
    mean = band.mean(axis=0) if len(band) else np.full(3, 128.0, np.float32)
    mode = rng.random()
    if mode < 0.25:  # low contrast: the band's colour, a little darker or lighter
        sign = 1.0 if mean.mean() < 128 else -1.0
        if rng.random() < 0.3:
            sign = -sign
        shift = sign * rng.uniform(25, 50) + rng.normal(0, 6, 3)
        color = np.clip(mean + shift, 0, 255)
        if np.abs(color - mean).mean() < 20:  # clipped at black or white: go the other way
            color = np.clip(mean - shift, 0, 255)
        return bgr(color)
    if mode < 0.75:  # high contrast: far from the band in brightness
        target = rng.uniform(0, 60) if mean.mean() > 128 else rng.uniform(190, 255)
        return bgr(np.clip(target + rng.normal(0, 30, 3), 0, 255))
    return bgr(rng.uniform(0, 255, 3))


def clothes(rng, color: BGR) -> tuple[BGR | None, BGR | None]:
    """(upper, head): a top of another colour and a face, or neither (one colour all over).
    Near `color`'s brightness, so a low-contrast figure stays low-contrast."""
    upper = head = None
    base = np.array(color, np.float32)
    if rng.random() < 0.5:
        upper = bgr(np.clip(base + rng.normal(0, 35, 3), 0, 255))
    if rng.random() < 0.5:
        skin = np.array([0.55, 0.7, 0.95], np.float32) * rng.uniform(60, 230)  # BGR skin tones
        head = bgr(np.clip(0.5 * skin + 0.5 * base, 0, 255))
    return upper, head


class Occluder:
    """Something between the camera and the figure, drawn over it: a post, a low box or a bush,
    coloured from a texture. Fixed in the scene (moves with the camera shake)."""

    def __init__(self, rng, size: tuple[int, int], floor_y: float, fig_h: float) -> None:
        hgt, wid = size
        kind = ("post", "box", "bush")[int(rng.integers(3))]
        x = rng.uniform(0.1, 0.9) * wid
        if kind == "post":
            pw = max(3.0, rng.uniform(0.07, 0.18) * fig_h)
            x0, x1, y0, y1 = x - pw / 2, x + pw / 2, 0.0, float(hgt)
        else:
            bw = rng.uniform(0.4, 1.1) * fig_h
            bh = rng.uniform(0.12, 0.3) * fig_h
            x0, x1, y0, y1 = x - bw / 2, x + bw / 2, floor_y - bh, min(hgt, floor_y + 0.1 * fig_h)
        self.x0, self.y0 = int(x0), int(y0)
        ph, pw_ = max(1, int(y1) - self.y0), max(1, int(x1) - self.x0)
        self.patch = tex.texture(rng, ph, pw_)
        mask = np.zeros((ph, pw_), np.uint8)
        if kind == "bush":
            cv2.ellipse(mask, (pw_ // 2, ph), (pw_ // 2, ph), 0, 180, 360, 1, -1)
        else:
            mask[:] = 1
        self.mask = mask.astype(bool)[..., None]

    def draw(self, out: np.ndarray, dx: int, dy: int) -> None:
        hgt, wid = out.shape[:2]
        ph, pw = self.mask.shape[:2]
        x0, y0 = self.x0 + dx, self.y0 + dy
        a0, b0 = max(0, y0), max(0, x0)
        a1, b1 = min(hgt, y0 + ph), min(wid, x0 + pw)
        if a1 <= a0 or b1 <= b0:
            return
        src = (slice(a0 - y0, a1 - y0), slice(b0 - x0, b1 - x0))
        np.copyto(out[a0:a1, b0:b1], self.patch[src], where=self.mask[src])


class RealLayers:
    """Per-scene layers of the real preset: ``behind`` (cars, far walkers, the lamp) is drawn
    before the figure, ``front`` (the occluder, close walkers) after it, then ``finish`` (light
    and defocus). `story`: distractor rates for long streams rather than short clips."""

    def __init__(
        self, seed: int, lay: dis.Layout, photos: Sequence[np.ndarray], story: bool
    ) -> None:
        def rng(k: int) -> np.random.Generator:
            return np.random.default_rng([seed, 20 + k])

        size = lay.size
        self.bg = background(rng(0), size, lay.pad, lay.floor_y, photos)
        self.color = figure_color(rng(1), self.bg, lay.floor_y, lay.fig_h, lay.pad)
        self.upper, self.head = clothes(rng(7), self.color)
        r = rng(2)
        self.occluder = Occluder(r, size, lay.floor_y, lay.fig_h) if r.random() < 0.35 else None
        r = rng(3)
        walkers = dis.plan_walkers(
            r, lay, r.uniform(0.5, 3.0) if story else r.choice([0.0, 4.0, 10.0])
        )
        r = rng(4)
        if story:
            car_rate = r.uniform(0.0, 4.0) if r.random() < 0.5 else 0.0
        else:
            car_rate = r.choice([0.0, 0.0, 8.0])
        cars = dis.plan_cars(r, lay, car_rate)
        r = rng(5)
        lamp = [dis.plan_pendulum(r, lay)] if r.random() < 0.3 else []
        self.behind = [*cars, *(w for w in walkers if w.body.floor_y <= size[0]), *lamp]
        self.front = [w for w in walkers if w.body.floor_y > size[0]]
        r = rng(6)
        self.light = dis.Lighting(r, lay, 0.5 if story else 3.0)
        self.blur = r.uniform(0.5, 1.1) if r.random() < 0.25 else 0.0

    def draw_behind(self, out: np.ndarray, i: int, dx: int, dy: int) -> None:
        for d in self.behind:
            d.draw(out, i, dx, dy)

    def draw_front(self, out: np.ndarray, i: int, dx: int, dy: int) -> None:
        if self.occluder is not None:
            self.occluder.draw(out, dx, dy)
        for d in self.front:
            d.draw(out, i, dx, dy)

    def finish(self, out: np.ndarray, i: int) -> None:
        self.light.apply(out, i)
        if self.blur:
            cv2.GaussianBlur(out, (0, 0), self.blur, dst=out)
