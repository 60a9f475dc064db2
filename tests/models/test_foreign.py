"""The second synthetic world: written apart from the project's generator, in the layout a user
brings (a folder per class, no lists), with streams the evaluator reads."""

from __future__ import annotations

import ast
import csv
import math
from pathlib import Path

import cv2

from models import data, foreign
from models.evaluation import streams


def test_it_imports_nothing_of_the_project():
    names = set()
    for path in Path(foreign.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in names if m and m.split(".")[0] in ("edge_hf", "models", "export")}


def test_a_small_set_is_a_folder_dataset_with_labelled_streams(tmp_path: Path):
    out = tmp_path / "fw"
    argv = [str(out), "--clips-per-class", "2", "--streams", "2", "--stream-minutes", "0.5"]
    assert foreign.main([*argv, "--jobs", "1"]) == 0
    ds = data.load(out, seed=0, val_fraction=0.25, test_fraction=0.25)
    assert ds.classes == tuple(sorted(foreign.CLASSES))  # streams/ is not a class
    assert len(ds.train) + len(ds.val) + len(ds.test) == 12
    cap = cv2.VideoCapture(str(out / "fall" / "fall_0000.mp4"))
    assert (cap.get(cv2.CAP_PROP_FRAME_HEIGHT), cap.get(cv2.CAP_PROP_FRAME_WIDTH)) == (240, 320)
    assert cap.get(cv2.CAP_PROP_FPS) == foreign.FPS
    with open(out / "streams" / "segments.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for video in ("stream_000.mp4", "stream_001.mp4"):
        mine = [r for r in rows if r["video"] == video]
        starts = [int(r["start_frame"]) for r in mine]
        ends = [int(r["end_frame"]) for r in mine]
        assert starts[0] == 0 and all(
            s == e + 1 for s, e in zip(starts[1:], ends[:-1], strict=True)
        )
        n = int(cv2.VideoCapture(str(out / "streams" / video)).get(cv2.CAP_PROP_FRAME_COUNT))
        assert ends[-1] == n - 1 >= 0.5 * 60 * foreign.FPS - 1
    by = ("figure", "others", "scene")
    facts = streams.stream_facts(out / "streams", by, {"stream_000.mp4", "stream_001.mp4"})
    for video, fact in facts.items():
        scene, _ = foreign.story(int(1e7) + 900_000 + int(video[7:10]), 1)
        assert fact == {
            "figure": "near" if scene.fig.h >= 0.54 * 240 else "far",
            "others": "walker" if scene.other_on else "alone",
            "scene": scene.kind,
        }


def test_a_fall_ends_lying_and_the_same_seed_draws_the_same_clip():
    _, frames = foreign.clip("fall", 7)
    runs = [label for i, (_, label) in enumerate(frames) if i == 0 or frames[i - 1][1] != label]
    assert runs[-2:] == ["fall", "lying"] and runs[0] in ("stand", "walk_left", "walk_right")
    assert abs(frames[-1][0].tilt) == math.pi / 2 and frames[0][0].tilt == 0
    _, again = foreign.clip("fall", 7)
    assert [(p.x, p.tilt) for p, _ in again] == [(p.x, p.tilt) for p, _ in frames]


def test_every_fall_of_a_stream_is_followed_by_lying():
    _, frames = foreign.story(4, 90)
    labels = [label for _, label in frames]
    ends = [i for i in range(len(labels) - 1) if labels[i] == "fall" != labels[i + 1]]
    assert ends and all(labels[i + 1] == "lying" for i in ends)


def test_a_long_stream_keeps_its_figure_in_the_frame_and_its_light_in_range():
    """Three minutes: the figure turns round at the edges and falls or lies down towards the
    frame, and the exposure swings about a level, so no labelled move happens out of sight
    (before: walks left the frame and the light drifted to black or white)."""
    for seed in (11, 12, 13):
        scene, frames = foreign.story(seed, 180)
        xs = [p.x for p, _ in frames]
        assert foreign.MARGIN * foreign.W <= min(xs) <= max(xs) <= (1 - foreign.MARGIN) * foreign.W
        for p, label in frames:
            if label == "lying":
                head = p.x + math.sin(p.tilt) * 0.9 * scene.fig.h
                assert 0 <= head <= foreign.W
        gains = [scene.gain(i) for i in range(len(frames))]
        assert min(gains) >= 0.45 and max(gains) <= 1.63


def test_a_walk_clip_walks_one_way_inside_the_frame():
    for seed in range(20):
        _, frames = foreign.clip("walk_left", seed)
        assert {label for _, label in frames} == {"walk_left"}
        assert all(0 <= p.x <= foreign.W for p, _ in frames)


def test_other_clips_are_moves_that_must_not_alert():
    """--other: a seventh folder of the moves that start like a fall, each within the frame."""
    seen = set()
    for seed in range(12):
        _, frames = foreign.clip("other", seed)
        labels = {label for _, label in frames}
        assert not labels & {"fall", "lie_down", "wave", "hold"}
        seen |= labels & {"get_up", "sit_down", "crouch", "stumble"}
        assert all(0 <= p.x <= foreign.W for p, _ in frames)
    assert seen == {"get_up", "sit_down", "crouch", "stumble"}
