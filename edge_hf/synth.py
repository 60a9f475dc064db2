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

All variation comes from :class:`SceneParams`, sampled deterministically from the seed; frame ``i``
depends only on (params, size, fps, i), so ``render`` has random access. ``render`` draws into the
caller's buffer and allocates no arrays: the background and a few sensor-noise tiles are made once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from math import pi, sin
from typing import NamedTuple

import cv2
import numpy as np

from edge_hf import _figure as fig

ACTIONS: tuple[str, ...] = ("walk_left", "walk_right", "wave", "hold", "fall", "lie_down")
SCENES: tuple[str, ...] = (*ACTIONS, "demo")
DEMO_LABELS: tuple[str, ...] = ("walk", "stand", "fall", "lie_down", "lying", "get_up")
BACKGROUNDS: tuple[str, ...] = ("flat", "gradient", "shapes")

_LYING_REACH = 1.05  # lying figure's extent from the feet, in figure heights
_MARGIN = 0.4  # free space kept at the frame edges, in figure heights

BGR = tuple[int, int, int]


@dataclass(frozen=True)
class SceneParams:
    """Everything that varies between scenes. ``sample(seed)`` draws a set; override fields with
    ``dataclasses.replace`` (e.g. ``noise=0``) and pass it to ``make_scene(..., params=)``."""

    height: float  # figure height, fraction of frame height
    thickness: float  # limb thickness, fraction of figure height
    color: BGR  # figure colour
    floor: float  # floor line (feet), fraction of frame height from the top
    background: str  # one of BACKGROUNDS
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

    @classmethod
    def sample(cls, seed: int) -> SceneParams:
        """Draw every field from numpy's PCG64 seeded with `seed`: the same seed, the same scene."""
        rng = np.random.default_rng(seed)
        u = rng.uniform
        bright = bool(rng.random() < 0.5)  # bright figure on a dark scene, or the reverse
        figure = u(150, 255, 3) if bright else u(0, 100, 3)
        lo, hi = (0.0, 90.0) if bright else (160.0, 255.0)
        c0, c1 = u(lo, (lo + hi) / 2, 3), u((lo + hi) / 2, hi, 3)
        if rng.random() < 0.5:
            c0, c1 = c1, c0
        return cls(
            height=u(0.35, 0.6), thickness=u(0.035, 0.055), color=fig.bgr(figure),
            floor=u(0.84, 0.95), background=BACKGROUNDS[rng.integers(len(BACKGROUNDS))],
            bg_colors=(fig.bgr(c0), fig.bgr(c1)), shapes=int(rng.integers(2, 7)),
            noise=u(0.0, 5.0), jitter=u(0.0, 1.5) if rng.random() < 0.6 else 0.0,
            speed=u(0.6, 1.1), start=u(0.0, 1.0), swing=u(0.3, 0.45),
            side=1 if rng.random() < 0.5 else -1, lead_s=u(0.3, 0.6),
            fall_s=u(0.4, 0.8), lie_s=u(2.8, 4.0), clip_s=u(2.4, 3.6),
            wave_hz=u(1.2, 2.4), wave_center=u(1.75, 2.1), wave_amp=u(0.5, 0.8),
            hold=u(-1.0, 1.0), seed=int(seed),
        )  # fmt: skip


# Accepted ranges, checked once when a Scene is built (a bad override fails naming its field).
_LIMITS = {
    "height": (0.05, 0.9), "thickness": (0.01, 0.2), "floor": (0.3, 1.0), "shapes": (0, 100),
    "noise": (0.0, 50.0), "jitter": (0.0, 8.0), "speed": (0.05, 5.0), "start": (0.0, 1.0),
    "swing": (0.05, 0.8), "side": (-1, 1), "lead_s": (0.0, 30.0), "fall_s": (0.04, 30.0),
    "lie_s": (0.04, 60.0), "clip_s": (0.2, 600.0), "wave_hz": (0.05, 10.0),
    "wave_center": (0.0, pi), "wave_amp": (0.0, pi / 2), "hold": (-1.0, 1.0),
}  # fmt: skip


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
    if p.background not in BACKGROUNDS:
        raise ValueError(
            f"SceneParams.background must be one of {BACKGROUNDS}, got {p.background!r}"
        )


# ----------------------------------------------------------------------------- timelines


class _Stage(NamedTuple):
    """What a timeline builder needs: frame width, figure height (px), fps and the params."""

    width: int
    h: float
    fps: float
    p: SceneParams

    def frames(self, seconds: float) -> int:
        return max(1, round(seconds * self.fps))


_Beat = tuple[str, list[fig.Pose]]  # (label, poses)


def _walk(st: _Stage, x0: float, x1: float, n: int | None = None) -> list[fig.Pose]:
    """Walk from x0 towards x1 (x1 is the next beat's first position) in n frames (default: at
    the params' speed), in whole half-cycles, so the legs are together at both ends."""
    dist = abs(x1 - x0)
    if n is None:
        n = max(1, round(dist / (st.p.speed * st.h / st.fps)))
    step = 2 * (fig.THIGH + fig.SHIN) * st.h * sin(st.p.swing)
    half_cycles = max(1, round(dist / step))
    return [
        fig.walking(x0 + (x1 - x0) * i / n, pi * half_cycles * i / n, st.p.swing) for i in range(n)
    ]


def _topple(x: float, side: float, n: int, ease) -> list[fig.Pose]:
    """n frames along the shared standing-to-lying path; ease maps time (0, 1] to progress."""
    return [fig.toppling(x, side, ease((i + 1) / n)) for i in range(n)]


def _accelerate(u: float) -> float:  # a fall: starts slowly, hits the floor at full speed
    return u * u


def _smooth(u: float) -> float:  # deliberate: eases in and out
    return u * u * (3 - 2 * u)


def _rise(u: float) -> float:
    return 1.0 - _smooth(u)


def _spot(st: _Stage, side: int, where: float) -> float:
    """A feet position with room to topple towards `side`; where in 0..1 across the free range."""
    m, reach = _MARGIN * st.h, _LYING_REACH * st.h
    lo, hi = (m, st.width - m - reach) if side > 0 else (m + reach, st.width - m)
    return lo + where * max(0.0, hi - lo)


def _walk_clip(st: _Stage, leftward: bool) -> list[_Beat]:
    n = st.frames(st.p.clip_s)
    free = st.width - 2 * _MARGIN * st.h
    dist = min(st.p.speed * st.h / st.fps * n, free)
    x0 = _MARGIN * st.h + st.p.start * (free - dist)
    x1 = x0 + dist
    if leftward:  # the exact mirror image of the rightward clip
        x0, x1 = st.width - 1 - x0, st.width - 1 - x1
    label = "walk_left" if leftward else "walk_right"
    # x1 is reached at frame n, so n frames cover dist * (n - 1) / n: close enough
    return [(label, _walk(st, x0, x1, n))]


def _arm_clip(st: _Stage, waving: bool) -> list[_Beat]:
    p, n = st.p, st.frames(st.p.clip_s)
    m = _MARGIN * st.h
    x = m + p.start * (st.width - 2 * m)
    stance = fig.Pose(x, swing=0.08, arm_b=-p.side * fig.ARM_REST)
    if waving:
        w = 2 * pi * p.wave_hz / st.fps
        angles = [p.wave_center + p.wave_amp * sin(w * i) for i in range(n)]
    else:
        angles = [p.wave_center + p.hold * p.wave_amp] * n
    poses = [stance._replace(arm_a=p.side * a) for a in angles]
    return [("wave" if waving else "hold", poses)]


def _topple_clip(st: _Stage, fast: bool) -> list[_Beat]:
    p = st.p
    x = _spot(st, p.side, p.start)
    lead = st.frames(p.lead_s)
    if fast:
        n = st.frames(p.fall_s)
        rest = max(st.frames(0.6), st.frames(p.clip_s) - lead - n)
        motion = ("fall", _topple(x, p.side, n, _accelerate))
    else:
        n = st.frames(p.lie_s)
        rest = st.frames(0.5)
        motion = ("lie_down", _topple(x, p.side, n, _smooth))
    lying = fig.toppling(x, p.side, 1.0)
    return [("stand", [fig.standing(x)] * lead), motion, ("lying", [lying] * rest)]


def _demo(st: _Stage) -> list[_Beat]:
    """The looping story: walk to a spot, (stand,) fall or lie down, lie, get up, stand; repeat;
    walk back to the start so the loop is seamless."""
    rng = np.random.default_rng([st.p.seed, 7])
    kinds = [str(k) for k in rng.permutation(["fall", "fall", "lie_down"])]
    x_start = x = _spot(st, 1, rng.uniform(0.0, 0.3))
    beats: list[_Beat] = []
    for kind in kinds:
        side = 1 if rng.random() < 0.5 else -1
        for _ in range(20):  # walk somewhere noticeably different
            target = _spot(st, side, rng.uniform())
            if abs(target - x) > 0.15 * st.width:
                break
        beats.append(("walk", _walk(st, x, target)))
        x = target
        if kind == "lie_down" or rng.random() < 0.5:  # a fall may come straight out of the walk
            beats.append(("stand", [fig.standing(x)] * st.frames(rng.uniform(0.3, 1.0))))
        fast = kind == "fall"
        n = st.frames(st.p.fall_s if fast else st.p.lie_s)
        beats.append((kind, _topple(x, side, n, _accelerate if fast else _smooth)))
        beats.append(("lying", [fig.toppling(x, side, 1.0)] * st.frames(rng.uniform(2.0, 4.0))))
        beats.append(("get_up", _topple(x, side, st.frames(rng.uniform(1.5, 2.5)), _rise)))
        beats.append(("stand", [fig.standing(x)] * st.frames(rng.uniform(0.4, 1.0))))
    beats.append(("walk", _walk(st, x, x_start)))
    return beats


_TIMELINES = {
    "walk_left": lambda st: _walk_clip(st, leftward=True),
    "walk_right": lambda st: _walk_clip(st, leftward=False),
    "wave": lambda st: _arm_clip(st, waving=True),
    "hold": lambda st: _arm_clip(st, waving=False),
    "fall": lambda st: _topple_clip(st, fast=True),
    "lie_down": lambda st: _topple_clip(st, fast=False),
    "demo": _demo,
}


def _segments(beats: list[_Beat]) -> list[tuple[int, int, str]]:
    """(start, end inclusive, label) per run of equal labels."""
    out: list[tuple[int, int, str]] = []
    start = 0
    for label, poses in beats:
        if not poses:
            continue
        end = start + len(poses) - 1
        if out and out[-1][2] == label:
            out[-1] = (out[-1][0], end, label)
        else:
            out.append((start, end, label))
        start = end + 1
    return out


# ----------------------------------------------------------------------------- API


class Scene:
    """One procedural scene. Build with :func:`make_scene`; ``render(i, out)`` has random access.

    Attributes: ``name``, ``params`` (SceneParams), ``size`` (H, W), ``fps``, ``length`` (frames in
    one pass). Read-only after construction, so threads may render one scene into their own buffers.
    """

    def __init__(self, name: str, params: SceneParams, size: tuple[int, int], fps: float) -> None:
        if name not in _TIMELINES:
            raise ValueError(f"unknown synth scene {name!r}; valid scenes: {', '.join(SCENES)}")
        if len(size) != 2 or min(size) < 32:
            raise ValueError(f"synth size must be (H, W) with both >= 32, got {size!r}")
        if not 0 < fps <= 1000:
            raise ValueError(f"synth fps must be in (0, 1000], got {fps!r}")
        _check_params(params)
        self.name, self.params, self.fps = name, params, float(fps)
        self.size = (int(size[0]), int(size[1]))
        hgt, wid = self.size
        fig_h = min(params.height * hgt, 0.55 * wid)  # lying down must fit across the frame
        thick = max(2, round(params.thickness * fig_h))
        self._body = fig.Body(fig_h, thick, params.color, params.floor * hgt)
        beats = _TIMELINES[name](_Stage(wid, fig_h, self.fps, params))
        self._phases = _segments(beats)
        poses = [pose for _, ps in beats for pose in ps]
        self.length = len(poses)
        self._segments = self._phases if name == "demo" else [(0, self.length - 1, name)]
        self._labels = [label for s, e, label in self._segments for _ in range(e - s + 1)]
        self._frames = list(zip(poses, fig.shake(params, self.length, self.fps), strict=True))
        self._pad = int(np.ceil(params.jitter))
        self._bg = fig.background(params, self.size, self._pad)
        self._noise = fig.noise_tiles(params, self.size)
        self._shape = (hgt, wid, 3)

    def render(self, index: int, out: np.ndarray) -> None:
        """Draw frame `index` (wrapping modulo `length`) into `out`, an (H, W, 3) uint8 BGR array."""
        if out.shape != self._shape or out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise ValueError(
                f"out must be a C-contiguous uint8 array of shape {self._shape}, "
                f"got {out.dtype} {out.shape}"
            )
        i = index % self.length
        pose, (jx, jy) = self._frames[i]
        (hgt, wid), pad = self.size, self._pad
        np.copyto(out, self._bg[pad + jy : pad + jy + hgt, pad + jx : pad + jx + wid])
        fig.draw(out, self._body, pose, -jx, -jy)
        if self._noise:
            pos, neg = self._noise[i % len(self._noise)]
            oy, ox = (i * 5) % fig.NOISE_PAD, (i * 11) % fig.NOISE_PAD
            cv2.add(out, pos[oy : oy + hgt, ox : ox + wid], dst=out)
            cv2.subtract(out, neg[oy : oy + hgt, ox : ox + wid], dst=out)

    def label_at(self, index: int) -> str:
        return self._labels[index % self.length]

    def segments(self) -> list[tuple[int, int, str]]:
        """(start, end inclusive, label) covering frames 0..length-1 of one pass."""
        return list(self._segments)

    def phases(self) -> list[tuple[int, int, str]]:
        """Like segments(), with the story inside an action clip (stand / fall / lying ...)."""
        return list(self._phases)

    def __repr__(self) -> str:
        return (f"Scene({self.name!r}, seed={self.params.seed}, size={self.size}, "
                f"fps={self.fps}, length={self.length})")  # fmt: skip


def make_scene(
    name: str,
    *,
    seed: int = 0,
    size: tuple[int, int] = (360, 640),
    fps: float = 25.0,
    params: SceneParams | None = None,
) -> Scene:
    """Scene `name` (one of SCENES) at `size` (H, W). `params` defaults to
    ``SceneParams.sample(seed)``; when given, it is used as is (its own ``seed`` field counts)."""
    if name not in _TIMELINES:
        raise ValueError(f"unknown synth scene {name!r}; valid scenes: {', '.join(SCENES)}")
    if params is None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"synth seed must be a non-negative integer, got {seed!r}")
        params = SceneParams.sample(int(seed))
    return Scene(name, params, size, fps)


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
