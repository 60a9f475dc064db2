"""Procedural video scenes of a simple figure in which one frame is ambiguous and motion is not.

Used live by the runtime's ``synth://NAME`` source and by the trainer to write datasets (numpy
and OpenCV only). Scenes (``SCENES``): the six ``ACTIONS`` come in look-alike pairs

- ``walk_left`` / ``walk_right``: a side-on walker with a symmetric gait and no facing cue; the
  walk_left clip is the mirror image of the walk_right clip with the same seed (background aside).
- ``wave`` / ``hold``: one arm swings up and down / the same arm held still at an angle that the
  wave of the same seed also passes through.
- ``fall`` / ``lie_down``: standing lead-in, then the same path from upright to lying on the floor,
  fast (``fall_s``, 0.4-0.8 s) or slow (``lie_s``, 2.5-4 s); then the figure stays lying.

Every frame of an action scene carries the action's name (``segments()`` is one segment);
``phases()`` gives the finer story (``stand``, ``fall``/``lie_down``, ``lying``).

``demo`` is a looping story (about 30-40 s) with frame labels ``DEMO_LABELS``:

- ``walk``     walking between spots (either direction)
- ``stand``    standing still
- ``fall``     toppling fast from upright to the floor (frames while in motion, including the
               first lying frame); an alert detector should fire here
- ``lie_down`` the same path, slowly; should not alert
- ``lying``    lying still on the floor
- ``get_up``   the lie-down path in reverse, slowly
Each loop holds two falls and one lie-down in a seed-dependent order and ends where it starts.

Hard negatives (``HARD_NEGATIVES``, short clips): ``sit_down`` (to the floor, then sitting),
``crouch`` (down and up), ``pick_up`` (bend to the floor and up), ``stumble`` (a fall's start,
caught), ``turn`` (stop mid-walk, walk back), ``get_up`` (from lying); ``other`` is one of them
drawn from the seed. ``story`` is a long stream (``SceneParams.story_s``) with ``falls`` falls and
frame labels ``STORY_LABELS`` (see :mod:`edge_hf.synth.story`).

Mixed speed (``MIXED_SPEED``, for temporal pyramids): ``fall_stay`` and ``fall_recover`` are the
same fall, at a speed drawn from 0.25 to 1.2 s (fast and slow falls alike), followed by lying
still to the end, or by getting up within 1-2.5 s; with one seed the two clips are identical until
the get-up (``phases()``: stand or walk, fall, lying, get_up, stand).

Presets (``PRESETS``): ``easy`` is one figure on a flat, gradient or shapes background, nothing
else moving (the scenes above, as first made). ``real`` is domain-randomised so a model cannot
lean on a clean scene (:mod:`edge_hf.synth.scene_real`): photographs (passed in as arrays; edge_hf
ships none) or procedural textures, furniture, light and colour changes, a figure of any size
and colour (low contrast too) that may enter or leave the frame or be partly hidden, other
walkers, cars, a swinging lamp, flicker and light switches, noise, shake and blur; falls and
lie-downs come from standing or out of a walk, straight or over the knees.

All variation comes from :class:`SceneParams`, sampled deterministically from the seed; frame ``i``
depends only on (params, size, fps, i), so ``render`` has random access. ``render`` draws into the
caller's buffer and allocates no arrays: the background and a few sensor-noise tiles are made once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, fields
from math import pi

import cv2
import numpy as np

from edge_hf.synth import figure as fig
from edge_hf.synth import scenery, story
from edge_hf.synth import timelines as tl
from edge_hf.synth.distractors import CLIP_HORIZON_S, Layout
from edge_hf.synth.scene_real import RealLayers
from edge_hf.synth.story import STORY_LABELS
from edge_hf.synth.timelines import HARD_NEGATIVES, MIXED_SPEED

ACTIONS: tuple[str, ...] = ("walk_left", "walk_right", "wave", "hold", "fall", "lie_down")
SCENES: tuple[str, ...] = (*ACTIONS, "demo")
DEMO_LABELS: tuple[str, ...] = ("walk", "stand", "fall", "lie_down", "lying", "get_up")
# the real preset's action dataset: the actions, the still pose after a fall or a lie-down (frames of
# those clips and of training stories; no clips of its own: POSE_CLASSES) and the rest
REAL_CLASSES: tuple[str, ...] = (*ACTIONS, "lying", "other")
POSE_CLASSES: tuple[str, ...] = ("lying",)
NAMES: tuple[str, ...] = (*SCENES, *HARD_NEGATIVES, *MIXED_SPEED, "other", "story")  # all
PRESETS: tuple[str, ...] = ("easy", "real")
BACKGROUNDS: tuple[str, ...] = ("flat", "gradient", "shapes")  # easy; "real" draws its own

__all__ = [
    "ACTIONS",
    "BACKGROUNDS",
    "DEMO_LABELS",
    "HARD_NEGATIVES",
    "MIXED_SPEED",
    "NAMES",
    "PRESETS",
    "POSE_CLASSES",
    "REAL_CLASSES",
    "SCENES",
    "STORY_LABELS",
    "Scene",
    "SceneParams",
    "make_scene",
    "write_clip",
]

BGR = tuple[int, int, int]


@dataclass(frozen=True)
class SceneParams:
    """Everything that varies between scenes. ``sample(seed)`` draws a set; override fields with
    ``dataclasses.replace`` (e.g. ``noise=0``) and pass it to ``make_scene(..., params=)``."""

    height: float  # figure height, fraction of frame height
    thickness: float  # limb thickness, fraction of figure height
    color: BGR  # figure colour (real: picked against the background instead)
    floor: float  # floor line (feet), fraction of frame height from the top
    background: str  # one of BACKGROUNDS, or "real" (the real preset's scenery)
    bg_colors: tuple[BGR, BGR]  # wall/floor or gradient top/bottom; shapes blend between them
    shapes: int  # static shapes on the wall ("shapes" background)
    noise: float  # sensor noise standard deviation, grey levels (0: none)
    jitter: float  # camera shake amplitude, pixels (0: none)
    speed: float  # walking speed, figure heights per second
    start: float  # where in the free horizontal range the figure starts, 0..1
    swing: float  # leg swing amplitude while walking, radians
    side: int  # +1/-1: the side the figure topples to and waves with
    lead_s: float  # standing lead-in of fall/lie_down clips, seconds
    fall_s: float  # duration of a fall, seconds
    lie_s: float  # duration of a slow lie-down, seconds
    clip_s: float  # length of walk/wave/hold clips (fall: at least), seconds
    wave_hz: float  # arm swings per second
    wave_center: float  # mid angle of the waving arm from hanging down, radians
    wave_amp: float  # half the waving arc, radians
    hold: float  # held arm at wave_center + hold * wave_amp, -1..1
    seed: int  # background shapes, noise tiles, camera shake and the demo story
    story_s: float = 180.0  # length of a story, seconds
    falls: int = 2  # falls in a story

    @classmethod
    def sample(cls, seed: int, preset: str = "easy") -> SceneParams:
        """Draw every field from numpy's PCG64 seeded with `seed`: the same seed, the same scene.
        `preset` "real" draws from wider ranges (far and small figures too, faster falls)."""
        if preset == "real":
            return _sample_real(cls, seed)
        rng = np.random.default_rng(seed)
        u = rng.uniform
        bright = bool(rng.random() < 0.5)  # bright figure on a dark scene, or the reverse
        figure = u(150, 255, 3) if bright else u(0, 100, 3)
        lo, hi = (0.0, 90.0) if bright else (160.0, 255.0)
        c0, c1 = u(lo, (lo + hi) / 2, 3), u((lo + hi) / 2, hi, 3)
        if rng.random() < 0.5:
            c0, c1 = c1, c0
        return cls(
            height=u(0.35, 0.6),
            thickness=u(0.035, 0.055),
            color=fig.bgr(figure),
            floor=u(0.84, 0.95),
            background=BACKGROUNDS[rng.integers(len(BACKGROUNDS))],
            bg_colors=(fig.bgr(c0), fig.bgr(c1)),
            shapes=int(rng.integers(2, 7)),
            noise=u(0.0, 5.0),
            jitter=u(0.0, 1.5) if rng.random() < 0.6 else 0.0,
            speed=u(0.6, 1.1),
            start=u(0.0, 1.0),
            swing=u(0.3, 0.45),
            side=1 if rng.random() < 0.5 else -1,
            lead_s=u(0.3, 0.6),
            fall_s=u(0.4, 0.8),
            lie_s=u(2.8, 4.0),
            clip_s=u(2.4, 3.6),
            wave_hz=u(1.2, 2.4),
            wave_center=u(1.75, 2.1),
            wave_amp=u(0.5, 0.8),
            hold=u(-1.0, 1.0),
            seed=int(seed),
        )


FAR = 0.32  # a figure under this fraction of the frame's height is far
FAR_SHARE = 0.3  # of the real preset's scenes
HEIGHTS = {"far": (0.2, FAR), "near": (FAR, 0.62)}  # the real preset's figure heights


def _sample_real(cls, seed: int) -> SceneParams:
    rng = np.random.default_rng([seed, 19])
    u = rng.uniform
    far = rng.random() < FAR_SHARE
    return cls(
        height=u(*HEIGHTS["far" if far else "near"]),
        thickness=u(0.03, 0.07),
        color=(255, 255, 255),
        floor=u(0.62, 0.97),
        background="real",
        bg_colors=((0, 0, 0), (0, 0, 0)),
        shapes=0,
        noise=u(0.0, 8.0),
        jitter=u(0.0, 2.5) if rng.random() < 0.5 else 0.0,
        speed=u(0.5, 1.4),
        start=u(0.0, 1.0),
        swing=u(0.25, 0.5),
        side=1 if rng.random() < 0.5 else -1,
        lead_s=u(0.3, 0.9),
        fall_s=u(0.35, 0.9),
        lie_s=u(2.5, 4.5),
        clip_s=u(2.4, 3.6),
        wave_hz=u(1.2, 2.4),
        wave_center=u(1.75, 2.1),
        wave_amp=u(0.5, 0.8),
        hold=u(-1.0, 1.0),
        seed=int(seed),
    )


# Accepted ranges, checked once when a Scene is built (a bad override fails naming its field).
_LIMITS = {
    "height": (0.05, 0.9),
    "thickness": (0.01, 0.2),
    "floor": (0.3, 1.0),
    "shapes": (0, 100),
    "noise": (0.0, 50.0),
    "jitter": (0.0, 8.0),
    "speed": (0.05, 5.0),
    "start": (0.0, 1.0),
    "swing": (0.05, 0.8),
    "side": (-1, 1),
    "lead_s": (0.0, 30.0),
    "fall_s": (0.04, 30.0),
    "lie_s": (0.04, 60.0),
    "clip_s": (0.2, 600.0),
    "wave_hz": (0.05, 10.0),
    "wave_center": (0.0, pi),
    "wave_amp": (0.0, pi / 2),
    "hold": (-1.0, 1.0),
    "story_s": (1.0, 24 * 3600.0),
    "falls": (0, 1000),
}


def _check_params(p: SceneParams) -> None:
    for f in fields(p):
        if f.name in _LIMITS:
            lo, hi = _LIMITS[f.name]
            if not lo <= getattr(p, f.name) <= hi:
                raise ValueError(
                    f"SceneParams.{f.name} must be in [{lo}, {hi}], got {getattr(p, f.name)!r}"
                )
    bg0, bg1 = p.bg_colors
    for name, color in (("color", p.color), ("bg_colors[0]", bg0), ("bg_colors[1]", bg1)):
        if len(color) != 3 or not all(0 <= c <= 255 for c in color):
            raise ValueError(f"SceneParams.{name} must be 3 BGR values in 0..255, got {color!r}")
    if p.side not in (-1, 1):
        raise ValueError(f"SceneParams.side must be +1 or -1, got {p.side!r}")
    if p.background not in (*BACKGROUNDS, "real"):
        raise ValueError(
            f"SceneParams.background must be one of {(*BACKGROUNDS, 'real')}, got {p.background!r}"
        )


_TIMELINES = {
    "walk_left": lambda st: tl.walk_clip(st, leftward=True),
    "walk_right": lambda st: tl.walk_clip(st, leftward=False),
    "wave": lambda st: tl.arm_clip(st, waving=True),
    "hold": lambda st: tl.arm_clip(st, waving=False),
    "fall": lambda st: tl.topple_clip(st, fast=True),
    "lie_down": lambda st: tl.topple_clip(st, fast=False),
    "demo": tl.demo,
    **{k: (lambda st, k=k: tl.hard_negative_clip(st, k)) for k in HARD_NEGATIVES},
    "fall_stay": lambda st: tl.fall_then(st, recover=False),
    "fall_recover": lambda st: tl.fall_then(st, recover=True),
    "other": tl.other_clip,
    "story": story.story,
}
_STORIES = ("demo", "story")  # labelled frame by frame; every other scene is one label


# ----------------------------------------------------------------------------- API


def _check_scene_args(name: str, size: tuple[int, int], fps: float, preset: str) -> None:
    if name not in _TIMELINES:
        raise ValueError(f"unknown synth scene {name!r}; valid scenes: {', '.join(NAMES)}")
    if preset not in PRESETS:
        raise ValueError(f"unknown synth preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    if len(size) != 2 or min(size) < 32:
        raise ValueError(f"synth size must be (H, W) with both >= 32, got {size!r}")
    if not 0 < fps <= 1000:
        raise ValueError(f"synth fps must be in (0, 1000], got {fps!r}")


class Scene:
    """One procedural scene. Build with :func:`make_scene`; ``render(i, out)`` has random access.

    Attributes: ``name``, ``params`` (SceneParams), ``preset``, ``size`` (H, W), ``fps``,
    ``length`` (frames in one pass). Read-only after construction, so threads may render one scene into their own buffers.
    """

    def __init__(
        self,
        name: str,
        params: SceneParams,
        size: tuple[int, int],
        fps: float,
        preset: str = "easy",
        photos: Sequence[np.ndarray] = (),
    ) -> None:
        _check_scene_args(name, size, fps, preset)
        _check_params(params)
        self.name, self.params, self.fps, self.preset = name, params, float(fps), preset
        self.size = (int(size[0]), int(size[1]))
        hgt, wid = self.size
        fig_h = min(params.height * hgt, 0.55 * wid)  # lying down must fit across the frame
        thick = max(2, round(params.thickness * fig_h))
        beats = _TIMELINES[name](tl.Stage(wid, fig_h, self.fps, params, preset == "real"))
        self._phases = tl.segments(beats)
        poses = [pose for _, ps in beats for pose in ps]
        self.length = len(poses)
        self._segments = self._phases if name in _STORIES else [(0, self.length - 1, name)]
        self._labels = [label for s, e, label in self._segments for _ in range(e - s + 1)]
        self._frames = list(zip(poses, scenery.shake(params, self.length, self.fps), strict=True))
        self._pad = int(np.ceil(params.jitter))
        self._layers: RealLayers | None = None
        color = params.color
        if preset == "real":
            horizon = self.length
            if name not in _STORIES:
                horizon = max(horizon, round(CLIP_HORIZON_S * self.fps))
            lay = Layout(self.size, self.fps, horizon, params.floor * hgt, fig_h, self._pad)
            self._layers = RealLayers(params.seed, lay, photos, story=name in _STORIES)
            self._bg, color = self._layers.bg, self._layers.color
            clothes = (self._layers.upper, self._layers.head)
        else:
            self._bg = scenery.background(params, self.size, self._pad)
            clothes = (None, None)
        self._body = fig.Body(fig_h, thick, color, params.floor * hgt, *clothes)
        self._noise = scenery.noise_tiles(params, self.size)
        self._shape = (hgt, wid, 3)

    @property
    def figure_color(self) -> tuple[int, int, int]:
        """The labelled figure's (legs') BGR colour; the real preset picks it against the
        background and may give the figure a top of another colour and a face."""
        return self._body.color

    @property
    def figure_contrast(self) -> float:
        """How far the figure's colour is from the background band it stands in: the mean over
        B, G, R of the absolute difference, in grey levels (before lighting changes and noise)."""
        hgt, wid = self.size
        floor, pad = self.params.floor * hgt, self._pad
        top = max(0, int(pad + floor - self._body.height))
        band = self._bg[top : max(top + 1, int(pad + floor)), pad : pad + wid].reshape(-1, 3)
        return float(np.abs(band.mean(axis=0) - np.array(self._body.color, np.float64)).mean())

    @property
    def figure_height(self) -> float:
        """The labelled figure's standing height in pixels."""
        return self._body.height

    def render(self, index: int, out: np.ndarray) -> None:
        """Draw frame `index` (wrapping modulo `length`) into `out`, an (H, W, 3) uint8 BGR array."""
        if out.shape != self._shape or out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise ValueError(
                f"out must be a C-contiguous uint8 array of shape {self._shape}, "
                f"got {out.dtype} {out.shape}"
            )
        i = index % self.length
        pose, (jx, jy) = self._frames[i]
        (hgt, wid), pad, layers = self.size, self._pad, self._layers
        np.copyto(out, self._bg[pad + jy : pad + jy + hgt, pad + jx : pad + jx + wid])
        if layers is not None:
            layers.draw_behind(out, i, -jx, -jy)
        fig.draw(out, self._body, pose, -jx, -jy)
        if layers is not None:
            layers.draw_front(out, i, -jx, -jy)
            layers.finish(out, i)
        if self._noise:
            pos, neg = self._noise[i % len(self._noise)]
            oy, ox = (i * 5) % scenery.NOISE_PAD, (i * 11) % scenery.NOISE_PAD
            cv2.add(out, pos[oy : oy + hgt, ox : ox + wid], dst=out)
            cv2.subtract(out, neg[oy : oy + hgt, ox : ox + wid], dst=out)

    def pose(self, index: int) -> fig.Pose:
        """The labelled figure's pose at frame `index` (wrapping), e.g. ``tilt`` pi/2: lying."""
        return self._frames[index % self.length][0]

    def label_at(self, index: int) -> str:
        return self._labels[index % self.length]

    def segments(self) -> list[tuple[int, int, str]]:
        """(start, end inclusive, label) covering frames 0..length-1 of one pass."""
        return list(self._segments)

    def phases(self) -> list[tuple[int, int, str]]:
        """Like segments(), with the story inside an action clip (stand / fall / lying ...)."""
        return list(self._phases)

    def __repr__(self) -> str:
        return (
            f"Scene({self.name!r}, seed={self.params.seed}, size={self.size}, "
            f"fps={self.fps}, length={self.length})"
        )


def make_scene(
    name: str,
    *,
    seed: int = 0,
    size: tuple[int, int] = (360, 640),
    fps: float = 25.0,
    params: SceneParams | None = None,
    preset: str = "easy",
    photos: Sequence[np.ndarray] = (),
) -> Scene:
    """Scene `name` (one of NAMES) at `size` (H, W) in `preset` (one of PRESETS). `params`
    defaults to ``SceneParams.sample(seed, preset)``; when given, it is used as is (its own
    ``seed`` field counts). `photos`: background photographs for the real preset, (h, w, 3) BGR
    or (h, w) grey uint8 arrays; none: procedural textures only."""
    _check_scene_args(name, size, fps, preset)
    if params is None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"synth seed must be a non-negative integer, got {seed!r}")
        params = SceneParams.sample(int(seed), preset)
    return Scene(name, params, size, fps, preset, photos)


def write_clip(path: str | os.PathLike, scene: Scene, frames: int, *, fourcc: str = "mp4v") -> None:
    """Write frames 0..frames-1 of `scene` (wrapping past its length) to a video file."""
    if len(fourcc) != 4:
        raise ValueError(f"fourcc must be 4 characters such as 'mp4v' or 'MJPG', got {fourcc!r}")
    if frames < 0:
        raise ValueError(f"frames must be >= 0, got {frames}")
    hgt, wid = scene.size
    writer = cv2.VideoWriter(
        os.fspath(path), cv2.VideoWriter_fourcc(*fourcc), scene.fps, (wid, hgt)
    )
    try:
        if not writer.isOpened():
            raise OSError(
                f"cannot open a video writer for {os.fspath(path)!r} (fourcc {fourcc!r}, "
                f"{wid}x{hgt} @ {scene.fps} fps): check the folder exists and the codec suits the suffix"
            )
        frame = np.empty((hgt, wid, 3), np.uint8)
        for i in range(frames):
            scene.render(i, frame)
            writer.write(frame)
    finally:
        writer.release()
