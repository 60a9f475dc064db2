"""The second world's pictures: a figure drawn from its pose, and the scene around it (a room
or a photograph, maybe a second walker and a box, noise and a swinging exposure). Imports
nothing of the project (``models.foreign``)."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np

H, W, FPS = 240, 320, 30.0
PHOTOS = (
    "motorcycle_left.png",
    "motorcycle_right.png",
    "moon.png",
    "page.png",
    "retina.jpg",
    "color.png",
    "horse.png",
    "logo.png",
)


class Pose:
    """One frame of the figure: feet position, whole-body tilt (0 upright, +-pi/2 lying, about
    the feet), hip drop (0 standing, 1 squatting), leg swing and the arms' angles (0 down, pi/2
    held out in front)."""

    __slots__ = ("x", "tilt", "drop", "swing", "arm_l", "arm_r", "elbow", "face")

    def __init__(self, x, face=1, tilt=0.0, drop=0.0, swing=0.0, arm_l=0.15, arm_r=0.15, elbow=0.2):
        self.x, self.face, self.tilt, self.drop, self.swing = x, face, tilt, drop, swing
        self.arm_l, self.arm_r, self.elbow = arm_l, arm_r, elbow


class Figure:
    def __init__(self, r: np.random.Generator, floor: int, height: float) -> None:
        self.floor, self.h = floor, height
        self.shirt = tuple(int(v) for v in r.integers(0, 256, 3))
        self.legs = tuple(int(v) for v in r.integers(0, 200, 3))
        self.skin = tuple(
            int(v) for v in r.choice([[60, 90, 140], [120, 160, 210], [90, 130, 180], [40, 60, 90]])
        )
        self.width = max(2, int(height * r.uniform(0.07, 0.11)))

    def draw(self, img: np.ndarray, p: Pose) -> None:
        h, s = self.h, p.face
        leg, torso, arm, head = 0.47 * h, 0.32 * h, 0.36 * h, 0.085 * h
        hip_y = leg * (1 - 0.55 * p.drop)
        # local coordinates: feet at (0, 0), y up; rotated by tilt about the feet
        hip = (0.0, hip_y)
        knee_out = 0.5 * leg * p.drop
        pts = {
            "hip": hip,
            "neck": (0.0, hip_y + torso),
            "head": (0.0, hip_y + torso + head * 1.3),
            "knee1": (s * (knee_out + 0.5 * leg * math.sin(p.swing)), hip_y / 2),
            "knee2": (s * (knee_out - 0.5 * leg * math.sin(p.swing)), hip_y / 2),
            "foot1": (s * leg * math.sin(p.swing) * 0.9, 0.0),
            "foot2": (-s * leg * math.sin(p.swing) * 0.9, 0.0),
        }
        for name, a in (("l", p.arm_l), ("r", p.arm_r)):
            sx, sy = pts["neck"][0], pts["neck"][1] - 0.05 * h
            ex, ey = sx + s * 0.5 * arm * math.sin(a), sy - 0.5 * arm * math.cos(a)
            b = a + p.elbow
            pts["elbow" + name] = (ex, ey)
            pts["hand" + name] = (ex + s * 0.5 * arm * math.sin(b), ey - 0.5 * arm * math.cos(b))
            pts["shoulder" + name] = (sx, sy)
        c, sn = math.cos(p.tilt), math.sin(p.tilt)
        img_pts = {
            k: (int(round(p.x + x * c + y * sn)), int(round(self.floor - (-x * sn + y * c))))
            for k, (x, y) in pts.items()
        }
        w = self.width
        for a, b in (("hip", "knee1"), ("knee1", "foot1"), ("hip", "knee2"), ("knee2", "foot2")):
            cv2.line(img, img_pts[a], img_pts[b], self.legs, w, cv2.LINE_AA)
        cv2.line(img, img_pts["hip"], img_pts["neck"], self.shirt, int(w * 2.2), cv2.LINE_AA)
        for n in ("l", "r"):
            cv2.line(img, img_pts["shoulder" + n], img_pts["elbow" + n], self.shirt, w, cv2.LINE_AA)
            cv2.line(
                img,
                img_pts["elbow" + n],
                img_pts["hand" + n],
                self.skin,
                max(1, w - 1),
                cv2.LINE_AA,
            )
        cv2.circle(img, img_pts["head"], int(head), self.skin, -1, cv2.LINE_AA)


def _photo(r: np.random.Generator) -> np.ndarray:
    import skimage

    folder = Path(skimage.__file__).parent / "data"
    img = cv2.imread(str(folder / PHOTOS[r.integers(len(PHOTOS))]), cv2.IMREAD_COLOR)
    return cv2.resize(img, (W, H), interpolation=cv2.INTER_AREA)


def _room(r: np.random.Generator, floor: int) -> np.ndarray:
    img = np.empty((H, W, 3), np.float32)
    wall, ground = r.uniform(30, 230, 3), r.uniform(20, 200, 3)
    img[:floor] = wall * np.linspace(r.uniform(0.7, 1.2), r.uniform(0.7, 1.2), floor)[:, None, None]
    img[floor:] = ground
    tile = int(r.integers(12, 40))
    img[floor :: tile // 2] *= 0.8
    for x in range(int(r.integers(0, tile)), W, tile):
        cv2.line(img, (W // 2 + (x - W // 2) // 3, floor), (x, H), (ground * 0.75).tolist(), 1)
    for _ in range(int(r.integers(1, 5))):  # furniture and pictures
        x0, y0 = int(r.integers(0, W - 20)), int(r.integers(0, floor))
        x1, y1 = x0 + int(r.integers(15, 90)), min(floor + 10, y0 + int(r.integers(15, 80)))
        cv2.rectangle(img, (x0, y0), (x1, y1), r.uniform(0, 255, 3).tolist(), -1)
    return np.clip(img, 0, 255).astype(np.uint8)


class Scene:
    """A background, a floor line, a figure, maybe a second walker far behind, a box in front
    of the figure's path, and a light that drifts; noise on every frame."""

    def __init__(self, r: np.random.Generator) -> None:
        self.r = r
        self.floor = int(r.uniform(0.72, 0.97) * H)
        self.kind = "photo" if r.random() < 0.5 else "room"
        self.bg = _photo(r) if self.kind == "photo" else _room(r, self.floor)
        self.fig = Figure(r, self.floor, r.uniform(0.3, 0.72) * H)
        self.other = Figure(r, int(self.floor - r.uniform(0.1, 0.25) * H), self.fig.h * 0.5)
        self.other_on = r.random() < 0.4
        self.other_x, self.other_v = r.uniform(0, W), r.choice([-1, 1]) * r.uniform(0.8, 2.0)
        self.box = None
        if r.random() < 0.25:
            bx, bw = int(r.uniform(0, W - 40)), int(r.uniform(20, 60))
            self.box = (
                bx,
                self.floor - int(r.uniform(0.15, 0.4) * self.fig.h),
                bx + bw,
                self.floor + 3,
                r.uniform(0, 255, 3).tolist(),
            )
        # exposure: a level and a slow swing about it (clouds, a lamp warming up)
        self.light = (
            r.uniform(0.6, 1.3),
            r.uniform(0, 0.25),
            r.uniform(20, 120) * FPS,
            r.uniform(0, 2 * math.pi),
        )
        self.noise = r.uniform(1, 7)

    def render(self, p: Pose, i: int) -> np.ndarray:
        img = self.bg.copy()
        if self.other_on:
            self.other_x = (self.other_x + self.other_v) % (W + 40)
            face = 1 if self.other_v > 0 else -1
            swing = 0.45 * math.sin(i * 0.35)
            self.other.draw(
                img, Pose(self.other_x - 20, face, swing=swing, arm_l=-swing, arm_r=swing)
            )
        self.fig.draw(img, p)
        if self.box is not None:
            x0, y0, x1, y1, col = self.box
            cv2.rectangle(img, (x0, y0), (x1, y1), col, -1)
        gain = self.gain(i)
        out = img.astype(np.float32) * gain + self.r.normal(0, self.noise, img.shape)
        return np.clip(out, 0, 255).astype(np.uint8)

    def gain(self, i: int) -> float:
        level, swing, period, phase = self.light
        return level * (1 + swing * math.sin(2 * math.pi * i / period + phase))
