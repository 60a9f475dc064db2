"""Tests for models/synthdata.py, models/synthvideo.py and models/backgrounds.py: real files
written, decoded back and loaded by the trainer's own data loader."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import cv2
import pytest

from edge_hf import synth
from models import backgrounds, data, synthdata, synthlabels
from tests.conftest import ROOT, run_module

SIZE = (48, 64)


def _frames(path: Path) -> int:
    cap = cv2.VideoCapture(str(path))
    n = 0
    while cap.read()[0]:
        n += 1
    cap.release()
    return n


def test_photo_pools_are_in_the_wheel_and_disjoint() -> None:
    assert not set(backgrounds.TRAIN) & set(backgrounds.HELD_OUT)
    for pool in backgrounds.POOLS:
        photos = backgrounds.load(pool)
        assert len(photos) == len(backgrounds.POOLS[pool]) >= 4
        assert all(p.dtype == "uint8" and min(p.shape[:2]) >= 150 for p in photos)
    train = {p.tobytes() for p in backgrounds.load("train")}
    assert not any(p.tobytes() in train for p in backgrounds.load("held-out"))
    with pytest.raises(ValueError, match="unknown background pool 'test'"):
        backgrounds.load("test")


def test_photos_load_without_scikit_image_fetchers() -> None:
    """Read from the package folder: no skimage module imported, so nothing can download."""
    code = "import sys; from models import backgrounds as b; b.load('train'); b.load('held-out'); "
    code += "print(sorted(m for m in sys.modules if m.startswith('skimage')))"
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def real_actions(tmp_path_factory) -> tuple[Path, dict]:
    """A 4-clips-per-class real dataset, recording which photographs and seed each clip used."""
    root = tmp_path_factory.mktemp("real")
    used: dict[str, tuple[str, int]] = {}
    orig = synthdata._scene

    def spy(job):
        used[job.path.relative_to(root).as_posix()] = (job.pool, job.seed)
        return orig(job)

    mp = pytest.MonkeyPatch()
    mp.setattr(synthdata, "_scene", spy)
    try:
        synthdata.write_action_dataset(root, 4, SIZE, seed=5, preset="real")
    finally:
        mp.undo()
    return root, used


def test_real_dataset_layout_split_and_pools(real_actions) -> None:
    root, used = real_actions
    ds = data.load(root)
    assert ds.classes == synth.REAL_CLASSES and ds.classes[-1] == "other"
    # the test list is the test split; the validation part is carved from the training list;
    # lying has no clips of its own (frames of the fall and lie_down clips)
    assert synth.POSE_CLASSES == ("lying",) and not (root / "lying").exists()
    n = len(synth.REAL_CLASSES) - len(synth.POSE_CLASSES)
    assert len(ds.test) == n * 2 and len(ds.train) + len(ds.val) == n * 2 and ds.val
    assert ds.flip == {"walk_left": "walk_right", "walk_right": "walk_left"}
    assert json.loads((root / "flip.json").read_text()) == synthdata.FLIP_MAP
    test = {ln.strip() for ln in (root / "testlist01.txt").read_text().splitlines()}
    train = {ln.split()[0] for ln in (root / "trainlist01.txt").read_text().splitlines()}
    assert {used[r][0] for r in test} == {"held-out"} and {used[r][0] for r in train} == {"train"}
    assert not {used[r][1] for r in test} & {used[r][1] for r in train}  # seeds never shared
    facts = {r["video"]: r for r in csv.DictReader((root / "videos.csv").open())}
    assert sorted(facts) == sorted(test | train)  # by path: export.heldout --by figure
    for rel in sorted(test)[:3]:
        scene = synth.make_scene(_scene_of(rel), seed=used[rel][1], size=SIZE, preset="real")
        assert _frames(root / rel) == scene.length
        assert int(facts[rel]["figure_px"]) == round(scene.figure_height)
        assert facts[rel]["figure"] == ("far" if scene.figure_height < 0.32 * SIZE[0] else "near")
    # the scene of each clip: --by scene counts each hard negative of other apart
    kinds = {facts[r]["scene"] for r in facts if r.startswith("other/")}
    assert kinds == set(synth.HARD_NEGATIVES[:4])  # 4 clips: the first four in turn
    assert all(facts[r]["scene"] == _scene_of(r) for r in facts)


def _scene_of(rel: str) -> str:
    name, group, clip = re.fullmatch(r"(\w+)/v_\w+_g(\d+)_c(\d+)\.avi", rel).groups()
    k = (int(group) - 1) * synthdata.CLIPS_PER_GROUP + int(clip) - 1
    return synthlabels.scene_of(name, k, "real")


def test_real_clips_say_where_their_action_is(real_actions) -> None:
    """annotations.csv marks each clip's own action and the directed walks around it; the
    hard negatives and the still parts (standing, sitting) are other; lying after a fall or a
    lie-down is lying."""
    root, used = real_actions
    ds = data.load(root)
    other = ds.classes.index("other")
    walks, kinds = set(), set()
    for v in ds.train + ds.val + ds.test:
        rel = v.path.relative_to(root).as_posix()
        name = rel.split("/")[0]
        assert isinstance(v.labels, tuple) and v.video_class == ds.classes.index(name)
        scene = synth.make_scene(_scene_of(rel), seed=used[rel][1], size=SIZE, preset="real")
        assert v.video_class in v.labels  # every clip shows its class
        for start, end, phase in scene.phases():
            got = set(v.labels[start : end + 1]) if start < len(v.labels) else {-1}
            if phase == "walk":
                want = (
                    ds.classes.index(d)
                    if (d := synthlabels.walk_direction(scene, start, end)) != "walk"
                    else -1
                )
                dx = scene.pose(end).x - scene.pose(start).x
                assert want == -1 or (dx < 0) == (d == "walk_left")
                assert got == {want}, (rel, phase, dx)
                walks.add(want)
            elif phase in ds.classes:
                assert got == {ds.classes.index(phase)}, (rel, phase)
            else:
                assert phase in (*synthlabels.STILL, *synth.HARD_NEGATIVES), (rel, phase)
                assert got == {other}, (rel, phase)
                kinds.add(phase)
        if name in ("fall", "lie_down"):  # what follows the action is lying
            action, lying = ds.classes.index(name), ds.classes.index("lying")
            assert v.labels.index(lying, v.labels.index(action)) > v.labels.index(action)
    assert {ds.classes.index("walk_left"), ds.classes.index("walk_right")} <= walks
    assert set(synth.HARD_NEGATIVES[:4]) <= kinds  # other's 4 clips take them in turn


def test_stream_story_segments_match_the_videos(tmp_path: Path) -> None:
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed")
    n = synthdata.write_streams(tmp_path, 4, SIZE, seed=2, preset="real", minutes=0.4, codec="h264")
    rows = list(csv.DictReader((tmp_path / "segments.csv").open()))
    labels = (tmp_path / "classes.txt").read_text().split()
    assert tuple(labels) == synth.STORY_LABELS and {r["label"] for r in rows} <= set(labels)
    by_video = defaultdict(list)
    for r in rows:
        by_video[r["video"]].append((int(r["start_frame"]), int(r["end_frame"]), r["label"]))
    assert sorted(by_video) == [f"story_{k:03d}.mp4" for k in range(4)]
    total = 0
    for video, segs in by_video.items():
        assert segs[0][0] == 0 and all(
            a[1] + 1 == b[0] for a, b in zip(segs, segs[1:], strict=False)
        )
        assert _frames(tmp_path / video) == segs[-1][1] + 1  # every frame labelled, no more
        total += segs[-1][1] + 1
        falls = sum(label == "fall" for *_, label in segs)
        assert falls == synthdata.stream_falls(int(video[6:9]), 0.4, 2)
    assert total == n and synthdata.stream_falls(3, 3.0, 0) == 0 < synthdata.stream_falls(0, 3.0, 0)
    facts = {r["video"]: r for r in csv.DictReader((tmp_path / "videos.csv").open())}
    assert sorted(facts) == sorted(by_video)  # one row per stream: models.evaluate --by figure
    for k in range(4):  # the height the scene draws its figure at, far under a third of the frame
        params = synth.SceneParams.sample(2 * 100_000 + synthdata.STREAM_SEED + k, "real")
        scene = synth.make_scene("story", size=SIZE, params=params, preset="real")
        row = facts[f"story_{k:03d}.mp4"]
        assert int(row["figure_px"]) == round(scene.figure_height)
        assert row["figure"] == ("far" if scene.figure_height < 0.32 * SIZE[0] else "near")
        gl = float(row["contrast_gl"])  # Scene.figure_contrast on the stream's photo, rounded
        assert 0 <= gl <= 255 and row["contrast"] in ("low", "high")
        assert gl <= 40 if row["contrast"] == "low" else gl >= 40
    ds = data.load(tmp_path, val_fraction=0.5, test_fraction=0)
    assert "fall" in ds.classes and len(ds.train) + len(ds.val) == 4


def test_cli_writes_a_real_dataset_by_default(tmp_path: Path) -> None:
    r = run_module(
        "models.synthdata",
        str(tmp_path / "d"),
        "--clips-per-class",
        "2",
        "--size",
        "48x64",
        "--streams",
        "1",
        "--stream-minutes",
        "0.1",
        "--stream-codec",
        "mjpeg",
    )
    assert r.returncode == 0, r.stderr
    assert "frames/s" in r.stdout
    assert (tmp_path / "d" / "classInd.txt").read_text().split()[-1] == "other"
    assert (tmp_path / "d" / "streams" / "story_000.avi").is_file()
    fourcc = {_fourcc(p) for p in (tmp_path / "d").glob("*/v_*.avi")}  # --clip-codec mixed
    assert fourcc == {"MJPG", "h264"}, fourcc


def _fourcc(path: Path) -> str:
    cap = cv2.VideoCapture(str(path))
    code = int(cap.get(cv2.CAP_PROP_FOURCC))
    cap.release()
    return code.to_bytes(4, "little").decode().strip("\x00")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--size", "big"], "expected HxW such as 180x320, got 'big'"),
        (["--preset", "hard"], "invalid choice: 'hard'"),
        (["--jobs", "0"], "--jobs >= 1"),
    ],
)
def test_cli_rejects_bad_arguments(tmp_path: Path, args: list[str], needle: str) -> None:
    r = run_module("models.synthdata", str(tmp_path / "d"), *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


def test_cli_help_explains_every_flag() -> None:
    r = run_module("models.synthdata", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for phrase in (
        "output folder",
        "hard negatives",
        "are test clips",
        "labelled streams",
        "minutes",
        "bit rate",
        "HxW",
        "frame rate",
        "seed of everything",
        "worker",
    ):
        assert phrase in text, phrase


def test_a_mixed_speed_dataset_pairs_staying_down_with_getting_up(tmp_path: Path) -> None:
    """--mixed-speed: fall becomes fall_stay / fall_recover, annotated from the fall on (lying
    after it is part of them: no lying class)."""
    r = run_module(
        "models.synthdata",
        str(tmp_path / "d"),
        "--clips-per-class",
        "2",
        "--size",
        "48x64",
        "--mixed-speed",
    )
    assert r.returncode == 0, r.stderr
    ds = data.load(tmp_path / "d", val_fraction=0.5, test_fraction=0)
    assert ds.classes == (*synth.REAL_CLASSES[:4], "fall_stay", "fall_recover", "lie_down", "other")
    for v in ds.train + ds.val + ds.test:
        name = ds.classes[v.video_class]
        if name in synth.MIXED_SPEED:
            seen = [x for x in v.labels if x >= 0]
            first = v.labels.index(v.video_class)
            assert set(seen) == {v.video_class} and len(seen) == len(v.labels) - first
            assert first > 0  # the lead-in (standing or walking) is left out


def test_training_streams_use_training_photos_and_the_action_classes(tmp_path: Path) -> None:
    used: list[tuple[str, int]] = []
    orig = synthdata._scene

    def spy(job):
        used.append((job.pool, job.seed))
        return orig(job)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(synthdata, "_scene", spy)
        synthdata.write_streams(
            tmp_path, 2, SIZE, seed=0, preset="real", minutes=0.4, codec="mjpeg", training=True
        )
    assert {pool for pool, _ in used} == {"train"}
    evaluation = {0 * 100_000 + synthdata.STREAM_SEED + k for k in range(40)}
    assert not {seed for _, seed in used} & evaluation
    ds = data.load(tmp_path, val_fraction=0.5, test_fraction=0)
    assert ds.classes == synth.REAL_CLASSES
    seen = {lab for v in ds.train + ds.val for lab in v.labels} - {-1}
    assert {"walk_left", "walk_right", "fall", "lying", "other"} <= {ds.classes[i] for i in seen}


def test_cli_training_streams_need_the_real_preset(tmp_path: Path) -> None:
    r = run_module(
        "models.synthdata", str(tmp_path / "d"), "--preset", "easy", "--train-streams", "1"
    )
    assert r.returncode == 2 and "--train-streams needs --preset real" in r.stderr
    assert not (tmp_path / "d").exists()
