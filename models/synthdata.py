"""Write synthetic datasets with edge_hf.synth, in the layouts the trainer reads.

    python -m models.synthdata OUT [--clips-per-class 40] [--streams 6] [--size 180x320] [--seed 0]

(a) a folder-per-class dataset in UCF101 layout: ``OUT/<class>/v_<class>_gGG_cCC.avi`` plus
``classInd.txt``, ``trainlist01.txt``, ``testlist01.txt`` (split by group, as UCF101 does, so
clips of one group never straddle train and test), and ``flip.json``: a horizontal flip turns
``walk_left`` into ``walk_right``;
(b) with ``--streams N``, a second dataset in ``OUT/streams/``: long clips of the demo story and
``segments.csv`` (``video,start_frame,end_frame,label``), e.g. someone walking who falls at a
known frame.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from edge_hf import synth

FLIP_MAP = {"walk_left": "walk_right", "walk_right": "walk_left"}
CLIPS_PER_GROUP = 2
TEST_EVERY = 4  # groups 1, 5, 9, ... are test: about a quarter


def write_action_dataset(
    out: Path, clips_per_class: int, size: tuple[int, int], seed: int, fps: float = 25.0
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    train, test = [], []
    for ci, action in enumerate(synth.ACTIONS):
        (out / action).mkdir(exist_ok=True)
        for k in range(clips_per_class):
            group, clip = k // CLIPS_PER_GROUP + 1, k % CLIPS_PER_GROUP + 1
            rel = f"{action}/v_{action}_g{group:02d}_c{clip:02d}.avi"
            # one seed per (clip, class) pair: the pairs share looks, so appearance cannot tell them apart
            scene = synth.make_scene(action, seed=seed * 100_000 + k, size=size, fps=fps)
            synth.write_clip(out / rel, scene, scene.length, fourcc="MJPG")
            (test if group % TEST_EVERY == 1 else train).append((rel, ci + 1))
    (out / "classInd.txt").write_text(
        "".join(f"{i + 1} {a}\n" for i, a in enumerate(synth.ACTIONS))
    )
    (out / "trainlist01.txt").write_text("".join(f"{rel} {c}\n" for rel, c in train))
    (out / "testlist01.txt").write_text("".join(f"{rel}\n" for rel, _ in test))
    (out / "flip.json").write_text(json.dumps(FLIP_MAP, indent=1) + "\n")


def write_streams(
    out: Path, count: int, size: tuple[int, int], seed: int, fps: float = 25.0
) -> None:
    """Long clips of the demo story with frame-level segments."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(count):
        scene = synth.make_scene("demo", seed=seed * 100_000 + 50_000 + k, size=size, fps=fps)
        rel = f"story_{k:02d}.avi"
        synth.write_clip(out / rel, scene, scene.length, fourcc="MJPG")
        rows += [(rel, start, end, label) for start, end, label in scene.segments()]
    with open(out / "segments.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["video", "start_frame", "end_frame", "label"])
        w.writerows(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--clips-per-class", type=int, default=40)
    ap.add_argument("--streams", type=int, default=0)
    ap.add_argument("--size", default="180x320", help="HxW of the written clips")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    h, w = (int(v) for v in args.size.lower().split("x"))
    write_action_dataset(args.out, args.clips_per_class, (h, w), args.seed)
    if args.streams:
        write_streams(args.out / "streams", args.streams, (h, w), args.seed)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
