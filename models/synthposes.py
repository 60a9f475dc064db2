"""Write a still-posture set for pretraining: many scenes, each seen for three frames.

    python -m models.synthposes OUT [--per-class 3000] [--seed 0] [--jobs 2]
                                [--as lying=lying:500,stand=other:100,...] [--frames N]

Each clip is three (``--frames``) consecutive frames of one ``real`` scene (``edge_hf.synth``,
training photographs only, every distractor) at a moment when the figure holds one of the postures
``POSTURES``: ``walk``, ``stand``, ``arm`` (an arm held out), ``lying``, ``sitting``, ``crouch``
(bent down to the floor) and ``tilted`` (half-way down a fall or a lie-down). Every clip is
another scene: the set shows a network thousands of backgrounds and figures in the time the
action clips show it a few hundred. Train a single-frame model on it (``models.train --data OUT
--frames 1``) and start a hyperframe recipe from it (``--pretrained OUT_RUN/best.pt``).

Layout: ``OUT/<posture>/v_<posture>_pNNNNN.avi`` (MJPG), ``segments.csv``, ``classes.txt`` and an
empty ``flip.json`` (a mirrored posture is the same posture). Seeds never used by
``models.synthdata`` for seeds below 20.

``--as POSTURE=LABEL:CLIPS,...`` writes only the postures named, each labelled as an action
dataset names it, for ``models.train --more-data`` beside it: many scenes of a still pose
the action clips show in few (lying after a fall in scenes the training never saw; docs/results.md). ``classes.txt`` then lists those labels.

``--frames N`` writes N consecutive frames a clip instead of three, for a hyperframe that spans
more (``--frames 7 --stride 2`` reads 13); a clip stays inside the posture's phase of its scene
(a phase shorter than N frames: its last frame repeats).

Exit codes: 0 done, 2 bad arguments, 3 scikit-image's photographs are missing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np

from edge_hf import synth
from models import backgrounds
from models.backgrounds import BackgroundError

FRAMES = 3  # a clip's frames unless --frames
SIZE = (180, 320)
FPS = 25.0
# posture -> (scenes that show it, their phase labels that are it, part of the phase to draw from)
POSTURES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[float, float]]] = {
    "walk": (("walk_left", "walk_right", "turn"), ("walk_left", "walk_right", "walk"), (0, 1)),
    "stand": (("get_up",), ("stand",), (0, 1)),
    "arm": (("hold",), ("hold",), (0, 1)),
    "lying": (("fall", "lie_down", "get_up"), ("lying",), (0, 1)),
    "sitting": (("sit_down",), ("sitting",), (0, 1)),
    "crouch": (("crouch", "pick_up"), ("crouch", "pick_up"), (0.35, 0.65)),
    "tilted": (("fall", "lie_down"), ("fall", "lie_down"), (0.3, 0.8)),
}
MAX_FRAMES = 64  # 2.5 s at 25 fps: longer is not a still posture
MAX_PER_CLASS = 100_000  # seeds: 2 000 000 + seed * 1 000 000 + posture * 100 000 + k


class Job(NamedTuple):
    out: Path
    posture: str
    k: int
    seed: int
    frames: int = FRAMES


def _write(job: Job) -> tuple[str, int, int, str] | None:
    """Render one clip; None if the drawn scene never shows the posture."""
    index = list(POSTURES).index(job.posture)
    seed = 2_000_000 + job.seed * 1_000_000 + index * MAX_PER_CLASS + job.k
    rng = np.random.default_rng(seed)
    scenes, labels, (a, b) = POSTURES[job.posture]
    name = scenes[int(rng.integers(len(scenes)))]
    params = synth.SceneParams.sample(seed, "real")
    scene = synth.make_scene(
        name, size=SIZE, fps=FPS, params=params, preset="real", photos=backgrounds.load("train")
    )
    spans = [(s, e) for s, e, lab in scene.phases() if lab in labels]
    if not spans:
        return None
    s, e = spans[int(rng.integers(len(spans)))]
    lo, hi = s + int(a * (e - s)), s + int(b * (e - s))
    first = int(rng.integers(lo, max(lo, hi - job.frames + 1) + 1))
    rel = f"{job.posture}/v_{job.posture}_p{job.k:05d}.avi"
    frame = np.empty((*SIZE, 3), np.uint8)
    fourcc = cv2.VideoWriter_fourcc(*"MJPG")
    writer = cv2.VideoWriter(str(job.out / rel), fourcc, FPS, (SIZE[1], SIZE[0]))
    for j in range(job.frames):
        scene.render(min(e, first + j), frame)
        writer.write(frame)
    writer.release()
    return rel, 0, job.frames - 1, job.posture


def write_postures(
    out: Path,
    per_class: int,
    seed: int = 0,
    workers: int = 1,
    as_labels: dict[str, tuple[str, int]] | None = None,
    frames: int = FRAMES,
) -> int:
    """Write the set; returns the number of clips. ``as_labels`` (posture: (label, clips)):
    only those postures, that many clips each, labelled so; ``frames``: each clip's frames."""
    plan = as_labels or {p: (p, per_class) for p in POSTURES}
    for p in plan:
        (out / p).mkdir(parents=True, exist_ok=True)
    jobs = [Job(out, p, k, seed, frames) for p, (_, n) in plan.items() for k in range(n)]
    if workers <= 1:
        rows = [_write(j) for j in jobs]
    else:
        with ProcessPoolExecutor(workers) as ex:
            rows = list(ex.map(_write, jobs, chunksize=64))
    kept = [(*r[:3], plan[r[3]][0]) for r in rows if r is not None]
    tmp = out / "segments.csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["video", "start_frame", "end_frame", "label"])
        w.writerows(kept)
    labels = dict.fromkeys(label for label, _ in plan.values())  # in order, once each
    (out / "classes.txt").write_text("\n".join(labels) + "\n")
    (out / "flip.json").write_text(json.dumps({}))
    tmp.replace(out / "segments.csv")  # last: a set without it was not finished
    return len(kept)


def _as_labels(text: str) -> dict[str, tuple[str, int]]:
    """``lying=lying:500,stand=other:100`` -> {"lying": ("lying", 500), "stand": ("other", 100)}."""
    out: dict[str, tuple[str, int]] = {}
    for item in text.split(","):
        posture, _, rest = (part.strip() for part in item.partition("="))
        label, _, clips = (part.strip() for part in rest.partition(":"))
        if posture not in POSTURES or not label or not clips.isdigit():
            raise argparse.ArgumentTypeError(
                f"expected POSTURE=LABEL:CLIPS with POSTURE one of {', '.join(POSTURES)}, "
                f"found {item!r}"
            )
        if not 0 < int(clips) <= MAX_PER_CLASS or posture in out:
            raise argparse.ArgumentTypeError(
                f"expected each posture once with 1..{MAX_PER_CLASS} clips, found {item!r}"
            )
        out[posture] = (label, int(clips))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m models.synthposes",
        description="Write a still-posture set (many scenes, three frames each) for pretraining.",
    )
    ap.add_argument("out", type=Path, help="output folder (created)")
    ap.add_argument(
        "--per-class", type=int, default=3000, help="clips per posture (default: %(default)s)"
    )
    ap.add_argument(
        "--seed", type=int, default=0, help="another seed, other scenes (default: %(default)s)"
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="worker processes (default: %(default)s)",
    )
    ap.add_argument(
        "--as",
        dest="as_labels",
        metavar="POSTURE=LABEL:CLIPS,...",
        type=_as_labels,
        help="only these postures, that many clips each (not --per-class), "
        "labelled for an action dataset (--more-data), e.g. lying=lying:500,"
        "stand=other:100",
    )
    ap.add_argument(
        "--frames",
        type=int,
        default=FRAMES,
        metavar="N",
        help="frames a clip, for a hyperframe that reads more than three "
        "(T=7 stride 2: 13; default: %(default)s)",
    )
    args = ap.parse_args(argv)
    if not 0 < args.per_class <= MAX_PER_CLASS or not 0 <= args.seed < 1000 or args.jobs < 1:
        ap.error(f"--per-class must be in 1..{MAX_PER_CLASS}, --seed in 0..999, --jobs >= 1")
    if not 1 <= args.frames <= MAX_FRAMES:
        ap.error(f"--frames must be in 1..{MAX_FRAMES}, found {args.frames}")
    t0 = time.perf_counter()
    try:
        n = write_postures(
            args.out, args.per_class, args.seed, args.jobs, args.as_labels, args.frames
        )
    except BackgroundError as e:
        print(f"models.synthposes: error: {e}", file=sys.stderr)
        return 3
    print(
        f"wrote {args.out}: {n} clips of {len(args.as_labels or POSTURES)} postures "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
