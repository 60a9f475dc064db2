"""A second synthetic world, written apart from ``edge_hf.synth``: the recipe checked on footage
this project's generator did not make.

    python -m models.foreign OUT [--clips-per-class 60] [--other 0] [--streams 12]
                                 [--stream-minutes 2] [--seed 0] [--jobs 2]

Nothing here comes from ``edge_hf`` or the rest of ``models``: other figures (a clothed body of
thick limbs and a head, shirt and trousers of their own colours, other proportions and gaits),
other scenes (rooms of a wall, a tiled floor and furniture, or photographs scikit-image ships that
the project's generator never uses, taken whole), 240 x 320 at 30 fps, MPEG-4 part 2 video, and
other timings. It writes what a user with their own footage would bring (docs/evaluation.md): a folder per class of the six classes of issue 8 (``walk_left``, ``walk_right``,
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
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np

from .render import FPS, H, Pose, Scene, W

CLASSES = ("walk_left", "walk_right", "wave", "hold", "fall", "lie_down")
MARGIN = 0.05  # the figure's feet stay this fraction of the width inside the frame
NEAR = 0.54  # a figure at least this fraction of the frame's height tall is "near"


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
    moves = [
        "walk",
        "walk",
        "walk",
        "stand",
        "wave",
        "hold",
        "sit",
        "crouch",
        "stumble",
        "lie_down",
    ] + ["fall"] * (2 if falls else 0)
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
    ap.add_argument(
        "--other",
        type=int,
        default=0,
        help="clips of a seventh class, other: moves that must not alert (getting "
        "up, sitting on the floor, crouching, stumbling)",
    )
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
        clips += [
            (args.out / cls / f"{cls}_{k:04d}.mp4", cls, base + c * 100_000 + k) for k in range(n)
        ]
    (args.out / "streams").mkdir(parents=True, exist_ok=True)
    stories = [
        (args.out / "streams" / f"stream_{k:03d}.mp4", base + 900_000 + k, args.stream_minutes * 60)
        for k in range(args.streams)
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        list(pool.map(_clip_job, clips, chunksize=4))
        done = list(pool.map(_story_job, stories))
    rows = [row for rs, _ in done for row in rs]
    _csv(
        args.out / "streams" / "segments.csv", ["video", "start_frame", "end_frame", "label"], rows
    )
    _csv(
        args.out / "streams" / "videos.csv",
        ["video", "figure", "figure_px", "others", "scene"],
        [f for _, f in done],
    )
    falls = sum(r[3] == "fall" for r in rows)
    print(f"wrote {args.out}: {len(clips)} clips, {len(stories)} streams ({falls} falls)")
    return 0
