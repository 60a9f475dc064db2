"""What the figure does, frame by frame: a timeline is a list of beats ``(label, poses)``.

The ``easy`` preset's clips and demo story are kept exactly as they were. The ``real`` preset adds
variety that only motion can tell apart (see :mod:`edge_hf.synth`): falls from standing or out of
a walk, to either side, straight down or to the knees first; the same variants, slowly, for
``lie_down``; walks that enter or leave the frame; and the hard negatives (:data:`HARD_NEGATIVES`),
each a short clip whose frames all look like some frame of a fall or a lie-down.
"""

from __future__ import annotations

from math import pi, sin
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from edge_hf.synth import figure as fig

if TYPE_CHECKING:
    from edge_hf.synth import SceneParams

LYING_REACH = 1.05  # lying figure's extent from the feet, in figure heights
MARGIN = 0.4  # free space kept at the frame edges, in figure heights
HARD_NEGATIVES: tuple[str, ...] = ("sit_down", "crouch", "pick_up", "stumble", "turn", "get_up")
MIXED_SPEED: tuple[str, ...] = ("fall_stay", "fall_recover")  # see fall_then
FALL_RANGE_S = (0.25, 1.2)  # mixed speed: the same fall, fast or slow

Beat = tuple[str, list[fig.Pose]]  # (label, poses)


class Stage(NamedTuple):
    """What a timeline builder needs: frame width, figure height (px), fps, the params and
    whether the ``real`` preset's variety is on."""

    width: int
    h: float
    fps: float
    p: SceneParams
    real: bool = False

    def frames(self, seconds: float) -> int:
        return max(1, round(seconds * self.fps))

    def rng(self, stream: int) -> np.random.Generator:
        """A generator for one purpose of this seed (same seed, same choices in every scene)."""
        return np.random.default_rng([self.p.seed, stream])


def walk(st: Stage, x0: float, x1: float, n: int | None = None) -> list[fig.Pose]:
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


def topple(x: float, side: float, n: int, ease) -> list[fig.Pose]:
    """n frames along the shared standing-to-lying path; ease maps time (0, 1] to progress."""
    return [fig.toppling(x, side, ease((i + 1) / n)) for i in range(n)]


def move(a: fig.Pose, b: fig.Pose, n: int, ease) -> list[fig.Pose]:
    """n frames from just after pose a to pose b."""
    return [fig.blend(a, b, ease((i + 1) / n)) for i in range(n)]


def accelerate(u: float) -> float:  # a fall: starts slowly, hits the floor at full speed
    return u * u


def smooth(u: float) -> float:  # deliberate: eases in and out
    return u * u * (3 - 2 * u)


def rise(u: float) -> float:
    return 1.0 - smooth(u)


def spot(st: Stage, side: int, where: float) -> float:
    """A feet position with room to topple towards `side`; where in 0..1 across the free range."""
    m, reach = MARGIN * st.h, LYING_REACH * st.h
    lo, hi = (m, st.width - m - reach) if side > 0 else (m + reach, st.width - m)
    return lo + where * max(0.0, hi - lo)


# ----------------------------------------------------------------------------- action clips


def walk_clip(st: Stage, leftward: bool) -> list[Beat]:
    n = st.frames(st.p.clip_s)
    margin = MARGIN
    if st.real and st.rng(31).random() < 0.35:  # enters or leaves the frame
        margin = -0.3
    free = st.width - 2 * margin * st.h
    dist = min(st.p.speed * st.h / st.fps * n, free)
    x0 = margin * st.h + st.p.start * (free - dist)
    x1 = x0 + dist
    if leftward:  # the exact mirror image of the rightward clip
        x0, x1 = st.width - 1 - x0, st.width - 1 - x1
    label = "walk_left" if leftward else "walk_right"
    # x1 is reached at frame n, so n frames cover dist * (n - 1) / n: close enough
    return [(label, walk(st, x0, x1, n))]


def arm_clip(st: Stage, waving: bool) -> list[Beat]:
    p, n = st.p, st.frames(st.p.clip_s)
    m = MARGIN * st.h
    x = m + p.start * (st.width - 2 * m)
    stance = fig.Pose(x, swing=0.08, arm_b=-p.side * fig.ARM_REST)
    if waving:
        w = 2 * pi * p.wave_hz / st.fps
        angles = [p.wave_center + p.wave_amp * sin(w * i) for i in range(n)]
    else:
        angles = [p.wave_center + p.hold * p.wave_amp] * n
    poses = [stance._replace(arm_a=p.side * a) for a in angles]
    return [("wave" if waving else "hold", poses)]


def topple_clip(st: Stage, fast: bool) -> list[Beat]:
    if st.real:
        return _real_topple_clip(st, fast)
    p = st.p
    x = spot(st, p.side, p.start)
    lead = st.frames(p.lead_s)
    if fast:
        n = st.frames(p.fall_s)
        rest = max(st.frames(0.6), st.frames(p.clip_s) - lead - n)
        motion = ("fall", topple(x, p.side, n, accelerate))
    else:
        n = st.frames(p.lie_s)
        rest = st.frames(0.5)
        motion = ("lie_down", topple(x, p.side, n, smooth))
    lying = fig.toppling(x, p.side, 1.0)
    return [("stand", [fig.standing(x)] * lead), motion, ("lying", [lying] * rest)]


def lead_in(st: Stage, x: float, seconds: float, walking: bool, rng) -> list[Beat]:
    """Standing at x, or walking into x from either side, for about `seconds`."""
    if not walking:
        return [("stand", [fig.standing(x)] * st.frames(seconds))]
    direction = 1 if rng.random() < 0.5 else -1
    dist = st.p.speed * st.h * seconds
    x0 = float(np.clip(x - direction * dist, 0.1 * st.h, st.width - 0.1 * st.h))
    return [("walk", walk(st, x0, x, st.frames(seconds)))]


def go_down(start: fig.Pose, x: float, side: float, n: int, ease, knees: bool) -> list[fig.Pose]:
    """From `start` (standing or mid-stride) to lying on the floor in n frames: along the shared
    toppling path, or to the knees (the first 45 %) and on down from there."""
    lying = fig.toppling(x, side, 1.0)
    if knees:
        k = max(1, round(0.45 * n))
        return move(start, fig.kneeling(x, side), k, ease) + move(
            fig.kneeling(x, side), lying, n - k, ease
        )
    path = topple(x, side, n, ease)
    return [fig.blend(start, pose, min(1.0, 3.0 * (i + 1) / n)) for i, pose in enumerate(path)]


def _real_topple_clip(st: Stage, fast: bool) -> list[Beat]:
    """fall / lie_down of the real preset: one seed, one variant (lead-in, side, knees), so the
    pair differ only in speed."""
    p, rng = st.p, st.rng(32)
    walking, knees = bool(rng.random() < 0.5), bool(rng.random() < 0.3)
    x = spot(st, p.side, p.start)
    beats = lead_in(st, x, p.lead_s + (0.5 if walking else 0.0), walking, rng)
    start = beats[-1][1][-1]
    if fast:
        n = st.frames(p.fall_s)
        down = ("fall", go_down(start, x, p.side, n, accelerate, knees))
        rest = max(st.frames(0.6), st.frames(p.clip_s) - len(beats[0][1]) - n)
    else:
        down = ("lie_down", go_down(start, x, p.side, st.frames(p.lie_s), smooth, knees))
        rest = st.frames(0.5)
    return [*beats, down, ("lying", [fig.toppling(x, p.side, 1.0)] * rest)]


# ----------------------------------------------------------------------------- hard negatives


def sit_down(st: Stage, x: float, side: int, rng) -> list[Beat]:
    """Down to the floor through a crouch, then sitting there."""
    stand, half = fig.standing(x), fig.crouching(x, side, 0.7)
    n = st.frames(rng.uniform(1.0, 2.0))
    k = n // 2
    down = move(stand, half, k, smooth) + move(half, fig.sitting(x, side), n - k, smooth)
    return [
        ("sit_down", down),
        ("sitting", [fig.sitting(x, side)] * st.frames(rng.uniform(0.8, 2))),
    ]


def stand_up(st: Stage, x: float, side: int, rng, seated: bool) -> list[Beat]:
    """get_up: from sitting (through a crouch) or from lying (back along the toppling path, or
    over the knees), to standing."""
    n = st.frames(rng.uniform(1.3, 2.6))
    if seated:
        half = fig.crouching(x, side, 0.7)
        k = n // 2
        poses = move(fig.sitting(x, side), half, k, smooth) + move(
            half, fig.standing(x), n - k, smooth
        )
    elif rng.random() < 0.5:
        poses = topple(x, side, n, rise)
    else:
        k = n // 2
        kneel = fig.kneeling(x, side, 0.6)
        poses = move(fig.toppling(x, side, 1.0), kneel, k, smooth)
        poses += move(kneel, fig.standing(x), n - k, smooth)
    return [("get_up", poses)]


def crouch(st: Stage, x: float, side: int, rng) -> list[Beat]:
    """Crouch down, stay a moment, rise."""
    low = fig.crouching(x, side, rng.uniform(0.7, 1.0))
    down, hold, up = (st.frames(rng.uniform(*r)) for r in ((0.4, 1.0), (0.3, 1.2), (0.4, 1.0)))
    poses = move(fig.standing(x), low, down, smooth) + [low] * hold
    return [("crouch", poses + move(low, fig.standing(x), up, smooth))]


def pick_up(st: Stage, x: float, side: int, rng) -> list[Beat]:
    """Bend over to the floor, stay a moment, straighten up."""
    low = fig.bending(x, side, rng.uniform(0.8, 1.0))
    down, hold, up = (st.frames(rng.uniform(*r)) for r in ((0.4, 0.9), (0.2, 0.7), (0.4, 0.9)))
    poses = move(fig.standing(x), low, down, smooth) + [low] * hold
    return [("pick_up", poses + move(low, fig.standing(x), up, smooth))]


def stumble(st: Stage, x: float, side: int, rng) -> list[Beat]:
    """A fall's start (fast tilt, arms thrown out) caught and undone: upright again at x."""
    tilt = rng.uniform(0.3, 0.55)
    lurch = fig.Pose(
        x,
        tilt=tilt,
        side=side,
        knee=0.35,
        swing=0.25,
        arm_a=side * rng.uniform(1.4, 2.2),
        arm_b=side * rng.uniform(0.8, 1.6),
    )
    out, back = st.frames(rng.uniform(0.15, 0.3)), st.frames(rng.uniform(0.4, 0.8))
    poses = move(fig.standing(x), lurch, out, accelerate) + move(
        lurch, fig.standing(x), back, smooth
    )
    return [("stumble", poses)]


def turn(st: Stage, x: float, side: int, rng) -> list[Beat]:
    """Stop mid-walk and stand a moment before walking back (the figure has no facing cue)."""
    return [("turn", [fig.standing(x)] * st.frames(rng.uniform(0.3, 0.9)))]


def hard_negative_clip(st: Stage, kind: str) -> list[Beat]:
    """One hard negative as a short clip: lead-in (standing or walking), the motion, a tail."""
    p, rng = st.p, st.rng(33)
    x = spot(st, p.side, p.start)
    if kind == "get_up":
        lying = [fig.toppling(x, p.side, 1.0)] * st.frames(rng.uniform(0.5, 1.2))
        return [("lying", lying), *stand_up(st, x, p.side, rng, seated=False), _still(st, x, 0.4)]
    walking = kind in ("stumble", "turn") or rng.random() < 0.4
    beats = lead_in(st, x, p.lead_s + 0.8, walking, rng)
    if kind == "sit_down":
        return beats + sit_down(st, x, p.side, rng)
    beats += {"crouch": crouch, "pick_up": pick_up, "stumble": stumble, "turn": turn}[kind](
        st, x, p.side, rng
    )
    if walking:  # walk on (a turn walks back the way it came)
        x0 = beats[0][1][0].x
        ahead = x0 if kind == "turn" else x + (x - x0)
        far = float(np.clip(ahead, 0.1 * st.h, st.width - 0.1 * st.h))
        return [*beats, ("walk", walk(st, x, far))]
    return [*beats, _still(st, x, 0.5)]


def _still(st: Stage, x: float, seconds: float) -> Beat:
    return ("stand", [fig.standing(x)] * st.frames(seconds))


def other_clip(st: Stage) -> list[Beat]:
    """``other``: one hard negative drawn from the seed."""
    kind = HARD_NEGATIVES[int(st.rng(34).integers(len(HARD_NEGATIVES)))]
    return hard_negative_clip(st, kind)


# ----------------------------------------------------------------------------- mixed speed


def fall_then(st: Stage, recover: bool) -> list[Beat]:
    """A fall at a speed drawn wide (``FALL_RANGE_S``: the same action fast and slow), then
    lying still to the end (``fall_stay``) or getting up within a few seconds
    (``fall_recover``). One seed draws the same lead-in, fall, wait and length for both, so the
    pair's frames are identical until the get-up: what tells them apart is what follows the
    fall, seconds later, which a window of a few seconds sees and one of three frames does not."""
    p, rng = st.p, st.rng(35)
    walking = bool(rng.random() < 0.5)
    fall_s, wait_s = rng.uniform(*FALL_RANGE_S), rng.uniform(1.0, 2.5)
    x = spot(st, p.side, p.start)
    beats = lead_in(st, x, p.lead_s + (0.5 if walking else 0.0), walking, rng)
    lying = fig.toppling(x, p.side, 1.0)
    down = go_down(beats[-1][1][-1], x, p.side, st.frames(fall_s), accelerate, knees=False)
    beats += [("fall", down), ("lying", [lying] * st.frames(wait_s))]
    after = [*stand_up(st, x, p.side, rng, seated=False), _still(st, x, 1.0)]
    if recover:
        return beats + after
    return [*beats[:-1], ("lying", beats[-1][1] + [lying] * sum(len(ps) for _, ps in after))]


# ----------------------------------------------------------------------------- the demo loop


def demo(st: Stage) -> list[Beat]:
    """The looping story: walk to a spot, (stand,) fall or lie down, lie, get up, stand; repeat;
    walk back to the start so the loop is seamless."""
    rng = np.random.default_rng([st.p.seed, 7])
    kinds = [str(k) for k in rng.permutation(["fall", "fall", "lie_down"])]
    x_start = x = spot(st, 1, rng.uniform(0.0, 0.3))
    beats: list[Beat] = []
    for kind in kinds:
        side = 1 if rng.random() < 0.5 else -1
        for _ in range(20):  # walk somewhere noticeably different
            target = spot(st, side, rng.uniform())
            if abs(target - x) > 0.15 * st.width:
                break
        beats.append(("walk", walk(st, x, target)))
        x = target
        if kind == "lie_down" or rng.random() < 0.5:  # a fall may come straight out of the walk
            beats.append(("stand", [fig.standing(x)] * st.frames(rng.uniform(0.3, 1.0))))
        fast = kind == "fall"
        n = st.frames(st.p.fall_s if fast else st.p.lie_s)
        beats.append((kind, topple(x, side, n, accelerate if fast else smooth)))
        beats.append(("lying", [fig.toppling(x, side, 1.0)] * st.frames(rng.uniform(2.0, 4.0))))
        beats.append(("get_up", topple(x, side, st.frames(rng.uniform(1.5, 2.5)), rise)))
        beats.append(("stand", [fig.standing(x)] * st.frames(rng.uniform(0.4, 1.0))))
    beats.append(("walk", walk(st, x, x_start)))
    return beats


def segments(beats: list[Beat]) -> list[tuple[int, int, str]]:
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
