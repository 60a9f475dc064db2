"""Write synthetic datasets with edge_hf.synth, in the layouts the trainer reads.

    python -m models.synthdata OUT [--preset real] [--clips-per-class 60] [--streams 40]
                               [--stream-minutes 3] [--size 180x320] [--seed 0] [--jobs 2]
                               [--mixed-speed]

(a) a folder-per-class dataset in UCF101 layout: ``OUT/<class>/v_<class>_gGG_cCC.avi`` plus
``classInd.txt``, ``trainlist01.txt``, ``testlist01.txt`` (split by group, as UCF101 does, so
clips of one group never straddle train and test), and ``flip.json``: a horizontal flip turns
``walk_left`` into ``walk_right``, and ``videos.csv`` (each clip's figure and contrast, as for the
streams below: ``python -m export.heldout ... --by figure --by contrast``). Preset ``real`` also
writes ``annotations.csv``: where in each clip is what (see :func:`annotations`). Preset ``real``
(the default here) has the classes ``edge_hf.synth.REAL_CLASSES``: the six actions, ``lying`` (the still pose after a fall or a
lie-down: frames of those clips, no clips of its own) and ``other`` (the hard negatives and the
other still poses: standing, sitting; its clips take the hard negatives in turn). Its training
clips use the training photographs (``models.backgrounds``) and its test clips the held-out
ones, with seeds the training list never uses. ``--clip-codec mixed`` (the default) writes each
clip as H.264 at a random bit rate (ffmpeg) or MJPG at a random JPEG quality (30-90), so the
model sees both kinds of compression artefacts. Preset ``easy``: the first synthetic world
(six classes, plain backgrounds, MJPG at OpenCV's default quality).
(b) with ``--streams N``, a second dataset in ``OUT/streams/``: long clips with ``segments.csv``
(``video,start_frame,end_frame,label``), ``classes.txt`` and ``videos.csv`` (each figure's
height in pixels, far or near, and its contrast against the background it stands in, low or
high: ``models.evaluate --by figure --by contrast``). ``real``: stories of
``--stream-minutes`` each on held-out photographs, every fourth one with no fall at all, the others
with about one fall a minute; ``fall`` covers the frames from the start of the fall motion up to
and including the impact. Written as H.264 at a random bit rate (ffmpeg) or ``--stream-codec
mjpeg``. ``easy``: the demo story.
(c) with ``--train-streams N`` (real), more stories in ``OUT/train-streams/`` on the training
photographs, with seeds no evaluation stream uses, labelled with the action classes (walks by
direction, lying ``lying``, hard negatives and other still poses ``other``): ``models.train --more-data`` adds them to
the training split.
With ``--mixed-speed`` the class ``fall`` becomes ``fall_stay`` and ``fall_recover`` (the same fall
at any speed, then lying still or getting up; annotated from the fall to the end of the clip).

Exit codes: 0 done, 2 bad arguments, 3 a tool or file is missing (ffmpeg, scikit-image's photos).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from edge_hf import synth
from models import backgrounds, synthvideo
from models.backgrounds import BackgroundError
from models.synthlabels import annotations, clip_codec, scene_of, walk_direction

FLIP_MAP = {"walk_left": "walk_right", "walk_right": "walk_left"}
CLIPS_PER_GROUP = 2
TEST_EVERY = 4  # groups 1, 5, 9, ... are test: about a quarter
NO_FALL_EVERY = 4  # real streams 3, 7, 11, ... have no fall (false alarms per hour)
STREAM_SEED = 50_000  # stream k uses seed * 100_000 + STREAM_SEED + k: never an action clip's
LOW_CONTRAST = 40.0  # grey levels between the figure and its background band: low under this
TRAIN_STREAM_SEED = 70_000  # training stream k: seed * 100_000 + 70_000 + k


class Job(NamedTuple):
    """One clip to render and write (picklable: runs in a worker process)."""

    path: Path
    name: str  # scene name
    seed: int
    size: tuple[int, int]
    fps: float
    preset: str
    pool: str  # photographs: a models.backgrounds.POOLS name
    codec: str  # one of synthvideo.CODECS
    story: tuple[float, int] | None = None  # (seconds, falls) of a story
    directed: bool = True  # walks get their direction (action clips, training stories)


def classes(preset: str, mixed: bool = False) -> tuple[str, ...]:
    """The preset's classes; ``mixed``: ``fall`` replaced by the mixed-speed pair (a fall, fast
    or slow, then staying down or getting up: ``edge_hf.synth.MIXED_SPEED``; lying after the fall
    is part of those, so there is no ``lying`` class)."""
    names = synth.REAL_CLASSES if preset == "real" else synth.ACTIONS
    if not mixed:
        return names
    return tuple(
        n
        for c in names
        if c not in synth.POSE_CLASSES
        for n in (synth.MIXED_SPEED if c == "fall" else (c,))
    )


def _scene(job: Job) -> synth.Scene:
    params = synth.SceneParams.sample(job.seed, job.preset)
    if job.story is not None:
        params = replace(params, story_s=job.story[0], falls=job.story[1])
    photos = backgrounds.load(job.pool) if job.preset == "real" else ()
    return synth.make_scene(
        job.name, size=job.size, fps=job.fps, params=params, preset=job.preset, photos=photos
    )


def _write(job: Job) -> list[tuple[str, int, int, str]]:
    """Render and write one clip; returns its phases (video name, start, end, label): a story's
    segments, or the parts of an action clip (walk_left, fall, lying ...)."""
    scene = _scene(job)
    synthvideo.write(job.path, scene, job.codec, np.random.default_rng([job.seed, 61]))
    phases = scene.phases()
    if job.directed:
        phases = [
            (s, e, walk_direction(scene, s, e) if lab == "walk" else lab) for s, e, lab in phases
        ]
    return [(job.path.name, s, e, label) for s, e, label in phases]


def _run(jobs: list[Job], workers: int) -> list[list[tuple[str, int, int, str]]]:
    if workers <= 1 or len(jobs) < 2:
        return [_write(j) for j in jobs]
    with ProcessPoolExecutor(min(workers, len(jobs))) as ex:
        return list(ex.map(_write, jobs, chunksize=1))


def write_action_dataset(
    out: Path,
    clips_per_class: int,
    size: tuple[int, int],
    seed: int,
    fps: float = 25.0,
    *,
    preset: str = "easy",
    workers: int = 1,
    mixed: bool = False,
    codec: str = "mjpeg",
) -> int:
    """Write the UCF101-layout dataset of `preset` (``mixed``: with the mixed-speed pair for
    ``fall``, see ``classes``); returns the number of frames written. ``codec`` (real preset):
    ``mjpeg``, ``h264``, or ``mixed``: each clip one of the two, drawn from its seed."""
    out.mkdir(parents=True, exist_ok=True)
    names = classes(preset, mixed)
    train, test, jobs = [], [], []
    for ci, action in enumerate(names):
        if action in synth.POSE_CLASSES:  # frames of other classes' clips only
            continue
        (out / action).mkdir(exist_ok=True)
        for k in range(clips_per_class):
            group, clip = k // CLIPS_PER_GROUP + 1, k % CLIPS_PER_GROUP + 1
            rel = f"{action}/v_{action}_g{group:02d}_c{clip:02d}.avi"
            is_test = group % TEST_EVERY == 1
            pool = "held-out" if is_test else "train"
            # one seed per (clip, class) pair: the pairs share looks, so appearance cannot tell them apart
            jobs.append(
                Job(
                    out / rel,
                    scene_of(action, k, preset),
                    seed * 100_000 + k,
                    size,
                    fps,
                    preset,
                    pool,
                    clip_codec(codec, seed * 100_000 + k) if preset == "real" else "mjpeg-default",
                )
            )
            (test if is_test else train).append((rel, ci + 1))
    segs = _run(jobs, workers)
    if preset == "real":
        _write_annotations(out / "annotations.csv", jobs, segs, names)
    (out / "classInd.txt").write_text("".join(f"{i + 1} {a}\n" for i, a in enumerate(names)))
    (out / "trainlist01.txt").write_text("".join(f"{rel} {c}\n" for rel, c in train))
    (out / "testlist01.txt").write_text("".join(f"{rel}\n" for rel, _ in test))
    (out / "flip.json").write_text(json.dumps(FLIP_MAP, indent=1) + "\n")
    _write_facts(out / "videos.csv", jobs, out)
    return sum(s[-1][2] + 1 for s in segs)


def _write_annotations(path: Path, jobs: list[Job], phases: list, names) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["video", "start_frame", "end_frame", "label"])
        for job, rows in zip(jobs, phases, strict=True):
            rel = f"{job.path.parent.name}/{job.path.name}"
            action = job.path.parent.name  # the class (job.name is its scene)
            w.writerows((rel, s, e, lab) for s, e, lab in annotations(action, rows, names))


def stream_falls(k: int, minutes: float, seed: int) -> int:
    """Falls in real stream k: none in every NO_FALL_EVERY-th, else about one a minute."""
    if k % NO_FALL_EVERY == NO_FALL_EVERY - 1:
        return 0
    rng = np.random.default_rng([seed, k, 71])
    return max(1, int(rng.integers(round(0.6 * minutes), round(1.4 * minutes) + 1)))


def write_streams(
    out: Path,
    count: int,
    size: tuple[int, int],
    seed: int,
    fps: float = 25.0,
    *,
    preset: str = "easy",
    minutes: float = 3.0,
    codec: str = "mjpeg-default",
    workers: int = 1,
    training: bool = False,
) -> int:
    """Long clips with frame-level segments: the demo story (easy) or stories on held-out
    photographs (real). ``training``: real stories on the training photographs with seeds no
    evaluation stream uses, labelled with the action dataset's classes (``annotations``) for
    ``models.train --more-data``. Returns the number of frames written."""
    out.mkdir(parents=True, exist_ok=True)
    suffix = ".mp4" if codec == "h264" else ".avi"
    jobs = []
    for k in range(count):
        s = seed * 100_000 + (TRAIN_STREAM_SEED if training else STREAM_SEED) + k
        if preset == "real":
            story = (60.0 * minutes, stream_falls(k, minutes, seed))
            pool = "train" if training else "held-out"
            job = Job(
                out / f"story_{k:03d}{suffix}",
                "story",
                s,
                size,
                fps,
                preset,
                pool,
                codec,
                story,
                directed=training,
            )
        else:
            job = Job(
                out / f"story_{k:02d}{suffix}",
                "demo",
                s,
                size,
                fps,
                preset,
                "",
                codec,
                directed=False,
            )
        jobs.append(job)
    segs = _run(jobs, workers)
    total = sum(e - s + 1 for phases in segs for _, s, e, _ in phases)
    labels = synth.STORY_LABELS if preset == "real" else synth.DEMO_LABELS
    rows = [row for phases in segs for row in phases]
    if training:  # the action dataset's classes: walks by direction, the rest other
        labels = classes(preset)
        rows = [
            (phases[0][0], s, e, lab)
            for phases in segs
            for s, e, lab in annotations("story", phases, labels)
        ]
    with open(out / "segments.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["video", "start_frame", "end_frame", "label"])
        w.writerows(rows)
    _write_facts(out / "videos.csv", jobs)
    (out / "classes.txt").write_text("".join(f"{c}\n" for c in labels))
    return total


def _write_facts(path: Path, jobs: list[Job], root: Path | None = None) -> None:
    """Per video (named by its path under ``root``; None: its file name): its scene (an ``other``
    clip's hard negative), its figure's standing height in pixels, and far (under synth.FAR of
    the frame's height) or near; its colour's distance from the background band it stands in
    (``Scene.figure_contrast``, grey levels), and low (under LOW_CONTRAST) or high: ``python -m
    models.evaluate ... --by figure --by contrast`` (streams), ``python -m export.heldout ...
    --by scene --by figure`` (clips)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["video", "scene", "figure", "figure_px", "contrast", "contrast_gl"])
        for job in jobs:
            h = synth.SceneParams.sample(job.seed, job.preset).height
            c = _scene(job).figure_contrast
            name = job.path.relative_to(root).as_posix() if root else job.path.name
            w.writerow(
                [
                    name,
                    job.name,
                    "far" if h < synth.FAR else "near",
                    round(h * job.size[0]),
                    "low" if c < LOW_CONTRAST else "high",
                    round(c, 1),
                ]
            )


def _rate(frames: int, seconds: float) -> str:
    return f"{frames / max(seconds, 1e-9):.0f} frames/s rendered and written"


def _falls(streams: Path) -> str:
    """'N falls, K of M streams without a fall', from segments.csv."""
    with open(streams / "segments.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    videos = {r["video"] for r in rows}
    falling = {r["video"] for r in rows if r["label"] == "fall"}
    falls = sum(r["label"] == "fall" for r in rows)
    return f"{falls} falls, {len(videos - falling)} of {len(videos)} streams without a fall"


def _report(folder: Path, frames: int, fps: float, seconds: float) -> None:
    hours, falls = frames / fps / 3600, _falls(folder)
    print(
        f"wrote {folder}: {frames} frames ({hours:.2f} h, {falls}) "
        f"in {seconds:.1f} s ({_rate(frames, seconds)})"
    )


def _size(text: str) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HxW such as 180x320, got {text!r}") from None
    if min(h, w) < 32:
        raise argparse.ArgumentTypeError(f"both sides must be >= 32, got {text!r}")
    return h, w


_FLAGS = (  # flag, type, default, help
    ("--clips-per-class", int, 60, "clips per class; a quarter (by group) are test clips"),
    ("--streams", int, 0, "long labelled streams to write in OUT/streams"),
    (
        "--train-streams",
        int,
        0,
        "real: long streams on the training photographs in OUT/train-streams, labelled with "
        "the action classes (train on them too: models.train --more-data OUT/train-streams)",
    ),
    ("--stream-minutes", float, 3.0, "length of each real stream, minutes"),
    ("--size", _size, (180, 320), "HxW of the written frames"),
    ("--fps", float, 25.0, "frame rate of everything written"),
    ("--seed", int, 0, "seed of everything written; another seed, other clips and streams"),
    ("--jobs", int, min(4, os.cpu_count() or 1), "worker processes rendering and encoding"),
)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m models.synthdata",
        description="Write synthetic action clips (UCF101 layout) and long labelled streams.",
    )
    ap.add_argument("out", type=Path, help="output folder (created)")
    ap.add_argument(
        "--preset",
        choices=synth.PRESETS,
        default="real",
        help="real: photographs or textures, distractors, hard negatives (class other); "
        "easy: the first plain scenes, six classes (default: %(default)s)",
    )
    ap.add_argument(
        "--mixed-speed",
        action="store_true",
        help="replace the class fall by fall_stay and fall_recover: the same fall, fast or slow, "
        "then staying down or getting up within seconds (for temporal pyramids; train with "
        "--abnormal fall_stay)",
    )
    ap.add_argument(
        "--clip-codec",
        choices=("mixed", "mjpeg", "h264"),
        default="mixed",
        help="real action clips: mixed (each clip H.264 at a random bit rate through ffmpeg, or "
        "MJPEG at a random JPEG quality), mjpeg (no ffmpeg needed) or h264 (default: %(default)s)",
    )
    ap.add_argument(
        "--stream-codec",
        choices=("h264", "mjpeg"),
        default="h264",
        help="real streams: h264 (ffmpeg, random bit rate) or mjpeg (random JPEG quality) "
        "(default: %(default)s)",
    )
    for flag, kind, default, text in _FLAGS:
        shown = "x".join(map(str, default)) if isinstance(default, tuple) else "%(default)s"
        ap.add_argument(flag, type=kind, default=default, help=f"{text} (default: {shown})")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    counts = (args.clips_per_class, args.streams, args.train_streams, args.seed)
    if min(counts) < 0 or args.jobs < 1:
        ap.error(
            "--clips-per-class, --streams, --train-streams and --seed must be >= 0, --jobs >= 1"
        )
    if args.train_streams and args.preset != "real":
        ap.error("--train-streams needs --preset real (easy draws no photographs)")
    if not 0 < args.stream_minutes <= 24 * 60 or not 0 < args.fps <= 1000:
        ap.error("--stream-minutes must be in (0, 1440] and --fps in (0, 1000]")
    t0 = time.perf_counter()
    try:
        n = write_action_dataset(
            args.out,
            args.clips_per_class,
            args.size,
            args.seed,
            args.fps,
            preset=args.preset,
            workers=args.jobs,
            mixed=args.mixed_speed,
            codec=args.clip_codec,
        )
        t1 = time.perf_counter()
        print(f"wrote {args.out}: {n} frames in {t1 - t0:.1f} s ({_rate(n, t1 - t0)})")
        if args.streams:
            codec = "mjpeg-default" if args.preset == "easy" else args.stream_codec
            m = write_streams(
                args.out / "streams",
                args.streams,
                args.size,
                args.seed,
                args.fps,
                preset=args.preset,
                minutes=args.stream_minutes,
                codec=codec,
                workers=args.jobs,
            )
            t2 = time.perf_counter()
            _report(args.out / "streams", m, args.fps, t2 - t1)
        if args.train_streams:
            t2 = time.perf_counter()
            m = write_streams(
                args.out / "train-streams",
                args.train_streams,
                args.size,
                args.seed,
                args.fps,
                preset="real",
                minutes=args.stream_minutes,
                codec=args.stream_codec,
                workers=args.jobs,
                training=True,
            )
            _report(args.out / "train-streams", m, args.fps, time.perf_counter() - t2)
    except (synthvideo.EncoderMissing, BackgroundError) as e:
        print(f"models.synthdata: error: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
