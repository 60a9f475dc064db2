"""A second synthetic world, written apart from ``edge_hf.synth``: the recipe checked on footage
this project's generator did not make.

    python -m models.foreign OUT [--clips-per-class 60] [--other 0] [--streams 12]
                                 [--stream-minutes 2] [--seed 0] [--jobs 2]

Nothing here comes from ``edge_hf`` or the rest of ``models``: other figures (a clothed body of
thick limbs and a head, shirt and trousers of their own colours, other proportions and gaits),
other scenes (rooms of a wall, a tiled floor and furniture, or photographs scikit-image ships that
the project's generator never uses, taken whole), 240 x 320 at 30 fps, MPEG-4 part 2 video, and
other timings. It writes what a user with their own footage would bring (README "A second
world"): a folder per class of the six classes of issue 8 (``walk_left``, ``walk_right``,
``wave``, ``hold``, ``fall``, ``lie_down``; with ``--other N`` a seventh, ``other``: getting
up, sitting on the floor, crouching, stumbling), no split lists, no annotations, no ``flip.json``;
and ``OUT/streams``: long videos with falls, lying down, and moves that start like a fall
(sitting on the floor, crouching, stumbling, getting up), labelled frame by frame in
``segments.csv`` for ``python -m models.evaluate``, with ``videos.csv`` (each stream's figure far
or near, a second walker or none, a room or a photograph: ``--by figure --by others --by
scene``).

Exit codes: 0 done, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np

CLASSES = ("walk_left", "walk_right", "wave", "hold", "fall", "lie_down")
H, W, FPS = 240, 320, 30.0
MARGIN = 0.05  # the figure's feet stay this fraction of the width inside the frame
NEAR = 0.54  # a figure at least this fraction of the frame's height tall is "near"
PHOTOS = ("motorcycle_left.png", "motorcycle_right.png", "moon.png", "page.png", "retina.jpg",
          "color.png", "horse.png", "logo.png")  # fmt: skip


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
        self.skin = tuple(int(v) for v in r.choice([[60, 90, 140], [120, 160, 210], [90, 130, 180],
                                                    [40, 60, 90]]))  # fmt: skip
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
            cv2.line(img, img_pts["elbow" + n], img_pts["hand" + n], self.skin, max(1, w - 1),
                     cv2.LINE_AA)  # fmt: skip
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
            self.box = (bx, self.floor - int(r.uniform(0.15, 0.4) * self.fig.h), bx + bw,
                        self.floor + 3, r.uniform(0, 255, 3).tolist())  # fmt: skip
        # exposure: a level and a slow swing about it (clouds, a lamp warming up)
        self.light = (r.uniform(0.6, 1.3), r.uniform(0, 0.25), r.uniform(20, 120) * FPS,
                      r.uniform(0, 2 * math.pi))  # fmt: skip
        self.noise = r.uniform(1, 7)

    def render(self, p: Pose, i: int) -> np.ndarray:
        img = self.bg.copy()
        if self.other_on:
            self.other_x = (self.other_x + self.other_v) % (W + 40)
            face = 1 if self.other_v > 0 else -1
            swing = 0.45 * math.sin(i * 0.35)
            self.other.draw(img, Pose(self.other_x - 20, face, swing=swing, arm_l=-swing,
                                      arm_r=swing))  # fmt: skip
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


def _ease(n: int) -> np.ndarray:
    return (1 - np.cos(np.linspace(0, math.pi, max(n, 2)))) / 2


class Actor:
    """Moves the figure and says what each frame shows: ``self.out`` collects (pose, label)."""

    def __init__(self, r: np.random.Generator, x: float, face: int, height: float) -> None:
        self.r, self.x, self.face, self.h = r, x, face, height
        self.phase, self.out = 0.0, []
        self.speed = r.uniform(0.5, 1.1) * height / FPS  # pixels a frame
        self.lie = 0.0  # the tilt of the lying figure

    def _n(self, seconds: float) -> int:
        return max(1, int(round(seconds * FPS)))

    def put(self, label: str, **kw) -> None:
        self.out.append((Pose(self.x, self.face, **kw), label))

    def walk(self, seconds: float) -> None:
        """Walks on, turning round at the frame's edges (MARGIN of its width)."""
        for _ in range(self._n(seconds)):
            if not MARGIN * W <= self.x + self.face * self.speed <= (1 - MARGIN) * W:
                self.face = -self.face
            self.x += self.face * self.speed
            self.phase += 2 * math.pi * 1.8 / FPS * self.r.uniform(0.9, 1.1)
            s = 0.45 * math.sin(self.phase)
            self.put("walk_left" if self.face < 0 else "walk_right", swing=s, arm_l=-s, arm_r=s)

    def stand(self, seconds: float, label: str = "stand") -> None:
        for i in range(self._n(seconds)):
            self.put(label, tilt=0.02 * math.sin(i / 9))

    def wave(self, seconds: float) -> None:
        f = self.r.uniform(1.2, 2.5)
        for i in range(self._n(seconds)):
            self.put("wave", arm_r=2.6, elbow=0.6 * math.sin(2 * math.pi * f * i / FPS))

    def hold(self, seconds: float) -> None:
        up = self._n(0.3)
        for i in range(self._n(seconds)):
            self.put("hold", arm_r=min(1.0, i / up) * math.pi / 2, elbow=0.0)

    def fall(self) -> None:
        n, side = (
            self._n(self.r.uniform(0.35, 0.7)),
            self._side(self.face * self.r.choice([1, 1, -1])),
        )
        for t in np.linspace(0, 1, n) ** 2:
            self.put("fall", tilt=side * math.pi / 2 * t, arm_l=1.2 * t, arm_r=1.5 * t)
        self.lie = side * math.pi / 2

    def lie_down(self) -> None:
        side = self._side(self.face * self.r.choice([1, -1]))
        for d in _ease(self._n(self.r.uniform(0.8, 1.4))):
            self.put("lie_down", drop=d, arm_r=0.6 * d)
        for t in _ease(self._n(self.r.uniform(1.0, 2.0))):
            self.put("lie_down", drop=1 - t, tilt=side * math.pi / 2 * t, arm_r=0.6)
        self.lie = side * math.pi / 2

    def _side(self, side: int) -> int:
        """``side``, or the other one when lying that way would put the head out of the frame."""
        return side if 0 <= self.x + side * 0.9 * self.h <= W else -side

    def lying(self, seconds: float) -> None:
        for _ in range(self._n(seconds)):
            self.put("lying", tilt=self.lie, arm_l=0.8, arm_r=0.3)

    def get_up(self) -> None:
        for t in _ease(self._n(self.r.uniform(1.0, 1.8)))[::-1]:
            self.put("get_up", drop=1 - t, tilt=self.lie * t, arm_r=0.6)
        for d in _ease(self._n(self.r.uniform(0.6, 1.0)))[::-1]:
            self.put("get_up", drop=d)

    def down_and_up(self, label: str, depth: float, tilt: float, hold: float) -> None:
        """Sitting on the floor (depth 1), crouching (0.8) or a stumble (a quick tilt back)."""
        down, up = self._n(self.r.uniform(0.3, 1.0)), self._n(self.r.uniform(0.4, 1.0))
        for t in _ease(down):
            self.put(label, drop=depth * t, tilt=self.face * tilt * t, arm_r=0.8 * t)
        for _ in range(self._n(hold)):
            self.put(label, drop=depth, tilt=self.face * tilt, arm_r=0.8)
        for t in _ease(up)[::-1]:
            self.put(label, drop=depth * t, tilt=self.face * tilt * t, arm_r=0.8 * t)


def _other(a: Actor, r: np.random.Generator) -> None:
    move = int(r.integers(4))
    a.stand(r.uniform(0.2, 0.6))
    if move == 0:  # getting up from lying
        a.lie = a._side(int(r.choice([-1, 1]))) * math.pi / 2
        a.lying(r.uniform(0.3, 0.8))
        a.get_up()
    elif move == 1:
        a.down_and_up("sit_down", 1.0, 0.25, r.uniform(0.5, 1.5))
    elif move == 2:
        a.down_and_up("crouch", 0.8, 0.0, r.uniform(0.3, 1.0))
    else:
        a.walk(0.5)
        a.down_and_up("stumble", 0.2, 0.45, 0.1)
    a.stand(r.uniform(0.2, 0.5))


def clip(cls: str, seed: int) -> tuple[Scene, list[tuple[Pose, str]]]:
    """One clip of ``cls`` (2-4 s), as a user's folder of that class would hold it: the whole
    clip is the class, before and after the move included."""
    r = np.random.default_rng(seed)
    scene = Scene(r)
    face = -1 if cls == "walk_left" else 1 if cls == "walk_right" else int(r.choice([-1, 1]))
    start = r.uniform(0.55, 0.95) * W if face < 0 else r.uniform(0.05, 0.45) * W
    if cls not in ("walk_left", "walk_right"):
        start = r.uniform(0.2, 0.8) * W
    a = Actor(r, start, face, scene.fig.h)
    if cls.startswith("walk"):
        n = a._n(r.uniform(2.0, 3.0))  # slow enough to stay in the frame: one direction
        room = (1 - MARGIN) * W - start if face > 0 else start - MARGIN * W
        a.speed = min(a.speed, 0.99 * room / n)
        a.walk(n / FPS)
    elif cls == "wave":
        a.stand(r.uniform(0.1, 0.5))
        a.wave(r.uniform(1.8, 3.0))
    elif cls == "hold":
        a.hold(r.uniform(2.0, 3.0))
    elif cls == "other":  # a move that must not alert, labelled whole as a user would
        _other(a, r)
    elif cls == "fall":
        (a.walk if r.random() < 0.5 else a.stand)(r.uniform(0.4, 1.2))
        a.fall()
        a.lying(r.uniform(0.8, 1.6))
    else:  # lie_down
        a.stand(r.uniform(0.2, 0.6))
        a.lie_down()
        a.lying(r.uniform(0.5, 1.0))
    return scene, a.out


def story(seed: int, seconds: float) -> tuple[Scene, list[tuple[Pose, str]]]:
    """A long stream: walking, standing, waving, holding, sitting on the floor, crouching,
    stumbling, and now and then a fall or lying down, each followed by lying and getting up."""
    r = np.random.default_rng(seed)
    scene = Scene(r)
    a = Actor(r, r.uniform(0.3, 0.7) * W, int(r.choice([-1, 1])), scene.fig.h)
    falls = r.random() < 0.8  # some streams hold no fall at all
    moves = ["walk", "walk", "walk", "stand", "wave", "hold", "sit", "crouch", "stumble",
             "lie_down"] + ["fall"] * (2 if falls else 0)  # fmt: skip
    while len(a.out) < seconds * FPS:
        move = moves[r.integers(len(moves))]
        if move == "walk":
            if not 0.15 * W < a.x < 0.85 * W:
                a.face = 1 if a.x < W / 2 else -1
            a.walk(r.uniform(1.0, 4.0))
        elif move == "stand":
            a.stand(r.uniform(1.0, 3.0))
        elif move == "wave":
            a.wave(r.uniform(1.5, 3.0))
        elif move == "hold":
            a.hold(r.uniform(1.5, 3.0))
        elif move == "sit":
            a.down_and_up("sit_down", 1.0, 0.25, r.uniform(1.0, 4.0))
        elif move == "crouch":
            a.down_and_up("crouch", 0.8, 0.0, r.uniform(0.3, 1.5))
        elif move == "stumble":
            a.walk(0.5)
            a.down_and_up("stumble", 0.2, 0.45, 0.1)
        else:
            a.fall() if move == "fall" else a.lie_down()
            a.lying(r.uniform(2.0, 6.0))
            a.get_up()
        a.stand(r.uniform(0.5, 1.5))
    return scene, a.out


def write(path: Path, scene: Scene, frames: list[tuple[Pose, str]]) -> None:
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
    if not out.isOpened():
        raise OSError(f"{path}: OpenCV cannot write MPEG-4 video here")
    for i, (pose, _) in enumerate(frames):
        out.write(scene.render(pose, i))
    out.release()


def segments(name: str, frames: list[tuple[Pose, str]]) -> list[tuple[str, int, int, str]]:
    rows: list[tuple[str, int, int, str]] = []
    for i, (_, label) in enumerate(frames):
        if rows and rows[-1][3] == label:
            rows[-1] = (name, rows[-1][1], i, label)
        else:
            rows.append((name, i, i, label))
    return rows


def _clip_job(job: tuple[Path, str, int]) -> None:
    path, cls, seed = job
    write(path, *clip(cls, seed))


def facts(name: str, scene: Scene) -> tuple[str, str, int, str, str]:
    """A row of ``streams/videos.csv``: the figure far (under NEAR of the frame's height) or
    near and its height in pixels, a second walker or none, and the background."""
    h = scene.fig.h
    near = "near" if h >= NEAR * H else "far"
    return name, near, round(h), "walker" if scene.other_on else "alone", scene.kind


def _story_job(job: tuple[Path, int, float]) -> tuple[list[tuple[str, int, int, str]], tuple]:
    path, seed, seconds = job
    scene, frames = story(seed, seconds)
    write(path, scene, frames)
    return segments(path.name, frames), facts(path.name, scene)


def _csv(path: Path, header: list[str], rows: list) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m models.foreign", description=__doc__.split("\n")[0]
    )
    ap.add_argument("out", type=Path, help="folder to write (made if missing)")
    ap.add_argument("--clips-per-class", type=int, default=60, help="clips of each class")
    ap.add_argument("--other", type=int, default=0,
                    help="clips of a seventh class, other: moves that must not alert (getting "
                    "up, sitting on the floor, crouching, stumbling)")  # fmt: skip
    ap.add_argument("--streams", type=int, default=12, help="long labelled streams")
    ap.add_argument("--stream-minutes", type=float, default=2.0, help="length of each stream")
    ap.add_argument("--seed", type=int, default=0, help="seed of everything drawn")
    ap.add_argument("--jobs", type=int, default=2, help="processes writing videos")
    args = ap.parse_args(argv)
    if (
        min(args.clips_per_class, args.other, args.streams) < 0
        or args.stream_minutes <= 0
        or args.jobs < 1
    ):
        ap.error("counts must be >= 0, --stream-minutes > 0 and --jobs >= 1")
    base = 10_000_000 * (args.seed + 1)
    clips = []
    counts = [args.clips_per_class] * len(CLASSES) + [args.other]
    for c, (cls, n) in enumerate(zip((*CLASSES, "other"), counts, strict=True)):
        if n or cls != "other":
            (args.out / cls).mkdir(parents=True, exist_ok=True)
        clips += [(args.out / cls / f"{cls}_{k:04d}.mp4", cls, base + c * 100_000 + k)
                  for k in range(n)]  # fmt: skip
    (args.out / "streams").mkdir(parents=True, exist_ok=True)
    stories = [(args.out / "streams" / f"stream_{k:03d}.mp4", base + 900_000 + k,
                args.stream_minutes * 60) for k in range(args.streams)]  # fmt: skip
    with ProcessPoolExecutor(args.jobs) as pool:
        list(pool.map(_clip_job, clips, chunksize=4))
        done = list(pool.map(_story_job, stories))
    rows = [row for rs, _ in done for row in rs]
    _csv(
        args.out / "streams" / "segments.csv", ["video", "start_frame", "end_frame", "label"], rows
    )
    _csv(args.out / "streams" / "videos.csv", ["video", "figure", "figure_px", "others", "scene"],
         [f for _, f in done])  # fmt: skip
    falls = sum(r[3] == "fall" for r in rows)
    print(f"wrote {args.out}: {len(clips)} clips, {len(stories)} streams ({falls} falls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
