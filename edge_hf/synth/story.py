"""``story``: a long stream (minutes) of one person's everyday activity with zero or more falls,
frame-labelled for event-level evaluation (labels: :data:`STORY_LABELS`).

The person walks between spots, stands, does the hard negatives (sits on the floor and gets up,
crouches, picks something up, stumbles, turns round), lies down slowly and gets up, waves, leaves
the frame for a while (``empty``) and comes back, and falls ``SceneParams.falls`` times (from
standing or out of a walk, to either side, straight or over the knees, in 0.35-0.9 s). After a
fall the person gets up within 1-5 s (two falls in five), after 10-60 s (two in five), or stays
down (one in five): then the story ends with them lying, at least ``STAY_S`` seconds, and any
falls still planned are not drawn. ``fall`` labels the frames from the start of the fall motion
up to and including the impact (the first frame on the floor); ``lying`` the floor after it,
until ``get_up``. A person who lies down on purpose lies 3-60 s.
"""

from __future__ import annotations

from math import pi, sin

import numpy as np

from edge_hf.synth import figure as fig
from edge_hf.synth import timelines as tl

STORY_LABELS: tuple[str, ...] = (
    "walk",
    "stand",
    "fall",
    "lying",
    "get_up",
    "lie_down",
    "sit_down",
    "sitting",
    "crouch",
    "pick_up",
    "stumble",
    "turn",
    "wave",
    "empty",
)

STAY_S = 15.0  # seconds a person who stays down lies at least, to the story's end
# after a fall: (share, lying seconds from, to); None: they stay down
_DOWN: tuple[tuple[float, tuple[float, float] | None], ...] = (
    (0.4, (1.0, 5.0)),
    (0.4, (10.0, 60.0)),
    (0.2, None),
)

# activity: weight (how often it is picked between falls)
_ACTIVITIES = {
    "stand": 3.0,
    "sit": 1.0,
    "crouch": 1.0,
    "pick_up": 1.2,
    "stumble": 0.8,
    "turn": 1.2,
    "lie": 0.6,
    "wave": 0.6,
    "leave": 0.5,
}


def story(st: tl.Stage) -> list[tl.Beat]:
    """Activities until ``story_s`` seconds are filled (a little more: the last activity ends);
    falls at seeded moments in between."""
    p, rng = st.p, st.rng(41)
    total = st.frames(p.story_s)
    fall_at = sorted(rng.uniform(0.05, 0.9, max(0, p.falls)) * total)
    names = list(_ACTIVITIES)
    weights = np.array([_ACTIVITIES[n] for n in names])
    x = tl.spot(st, 1, rng.uniform())
    beats: list[tl.Beat] = []
    n = 0
    while n < total or fall_at:  # every planned fall happens, even if late
        falling = bool(fall_at) and n >= fall_at[0]
        kind = "fall" if falling else names[rng.choice(len(names), p=weights / weights.sum())]
        if falling:
            fall_at.pop(0)
        side = 1 if rng.random() < 0.5 else -1
        target = tl.spot(st, side, rng.uniform())
        if falling:
            new, stays = _fall(st, x, target, side, rng)
            x = target
            if stays:  # lying to the end: the rest of the story is not drawn
                rest = max(st.frames(STAY_S), total - n - sum(len(ps) for _, ps in new))
                return [*beats, *new, ("lying", [fig.toppling(x, side, 1.0)] * rest)]
        else:
            new, x = _activity(st, kind, x, target, side, rng)
        beats += new
        n += sum(len(poses) for _, poses in new)
    return beats


def _activity(st: tl.Stage, kind: str, x: float, target: float, side: int, rng):
    """(beats, where the person ends up): a walk to `target`, then the activity there."""
    beats: list[tl.Beat] = []
    walking_in = abs(target - x) > 0.05 * st.h
    if kind == "leave":
        return _leave(st, x, rng), x
    if kind in ("stumble", "turn"):  # happen mid-walk: walk halfway, the event, then on
        mid = 0.5 * (x + target)
        beats.append(("walk", tl.walk(st, x, mid)))
        beats += {"stumble": tl.stumble, "turn": tl.turn}[kind](st, mid, side, rng)
        end = x if kind == "turn" else target
        return [*beats, ("walk", tl.walk(st, mid, end))], end
    if walking_in:
        beats.append(("walk", tl.walk(st, x, target)))
    x = target
    if kind == "stand":
        beats.append(("stand", [fig.standing(x)] * st.frames(rng.uniform(1.0, 8.0))))
    elif kind == "sit":
        beats += tl.sit_down(st, x, side, rng)
        beats.append(("sitting", [fig.sitting(x, side)] * st.frames(rng.uniform(3.0, 15.0))))
        beats += tl.stand_up(st, x, side, rng, seated=True)
    elif kind in ("crouch", "pick_up"):
        beats += {"crouch": tl.crouch, "pick_up": tl.pick_up}[kind](st, x, side, rng)
    elif kind == "lie":
        beats.append(
            (
                "lie_down",
                tl.go_down(
                    fig.standing(x),
                    x,
                    side,
                    st.frames(rng.uniform(2.5, 4.5)),
                    tl.smooth,
                    knees=bool(rng.random() < 0.4),
                ),
            )
        )
        beats.append(("lying", [fig.toppling(x, side, 1.0)] * st.frames(rng.uniform(3, 60))))
        beats += tl.stand_up(st, x, side, rng, seated=False)
    elif kind == "wave":
        beats.append(("wave", _wave(st, x, side, rng)))
    beats.append(("stand", [fig.standing(x)] * st.frames(rng.uniform(0.3, 1.5))))
    return beats, x


def _fall(st: tl.Stage, x: float, target: float, side: int, rng) -> tuple[list[tl.Beat], bool]:
    """Walk to the spot and fall out of the walk, or stand there a moment first; lie; get up,
    or (True) stay down: the beats end at the impact's first lying frames."""
    beats: list[tl.Beat] = []
    from_walk = abs(target - x) > 0.3 * st.h and rng.random() < 0.5
    if abs(target - x) > 0.05 * st.h:
        beats.append(("walk", tl.walk(st, x, target)))
    start = beats[-1][1][-1] if from_walk else fig.standing(target)
    if not from_walk:
        beats.append(("stand", [start] * st.frames(rng.uniform(0.3, 3.0))))
    n = st.frames(rng.uniform(0.35, 0.9))
    knees = bool(rng.random() < 0.3)
    beats.append(("fall", tl.go_down(start, target, side, n, tl.accelerate, knees)))
    share, spans = zip(*_DOWN, strict=True)
    span = spans[rng.choice(len(_DOWN), p=np.array(share))]
    if span is None:
        return beats, True
    beats.append(("lying", [fig.toppling(target, side, 1.0)] * st.frames(rng.uniform(*span))))
    beats += tl.stand_up(st, target, side, rng, seated=False)
    return [*beats, ("stand", [fig.standing(target)] * st.frames(rng.uniform(0.5, 2.0)))], False


def _wave(st: tl.Stage, x: float, side: int, rng) -> list[fig.Pose]:
    n, hz = st.frames(rng.uniform(1.5, 4.0)), rng.uniform(1.2, 2.4)
    w, centre, amp = 2 * pi * hz / st.fps, rng.uniform(1.75, 2.1), rng.uniform(0.5, 0.8)
    stance = fig.Pose(x, swing=0.08, arm_b=-side * fig.ARM_REST)
    return [stance._replace(arm_a=side * (centre + amp * sin(w * i))) for i in range(n)]


def _leave(st: tl.Stage, x: float, rng) -> list[tl.Beat]:
    """Walk out of the nearer side of the frame, nobody there for a while, walk back to x."""
    out = -0.6 * st.h if x < st.width / 2 else st.width + 0.6 * st.h
    gone = fig.standing(-10.0 * st.width)  # drawn nowhere
    return [
        ("walk", tl.walk(st, x, out)),
        ("empty", [gone] * st.frames(rng.uniform(2.0, 10.0))),
        ("walk", tl.walk(st, out, x)),
    ]
