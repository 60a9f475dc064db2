"""Tests for models/synthposes.py: a posture set written, decoded back and loaded by the
trainer's own data loader, and the CLI in a subprocess."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import cv2
import numpy as np

from models import data, synthposes
from tests.conftest import run_module


def _read(path: Path) -> list[np.ndarray]:
    cap, out = cv2.VideoCapture(str(path)), []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        out.append(frame)
    cap.release()
    return out


def test_every_posture_is_written_as_three_frames_the_trainer_reads(tmp_path: Path) -> None:
    n = synthposes.write_postures(tmp_path / "p", 2, seed=0, workers=2)
    with open(tmp_path / "p" / "segments.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert n == len(rows) == 2 * len(synthposes.POSTURES)
    assert {r["label"] for r in rows} == set(synthposes.POSTURES)
    for r in rows:
        frames = _read(tmp_path / "p" / r["video"])
        assert r["video"].startswith(f"{r['label']}/")
        assert len(frames) == 3 and frames[0].shape == (180, 320, 3)
    assert json.loads((tmp_path / "p" / "flip.json").read_text()) == {}
    ds = data.load(tmp_path / "p", val_fraction=0.25, test_fraction=0)
    assert list(ds.classes) == list(synthposes.POSTURES)
    assert len(ds.train) + len(ds.val) == n


def test_a_seed_is_one_set_and_another_seed_another(tmp_path: Path) -> None:
    job = synthposes.Job(tmp_path, "lying", 0, 0)
    (tmp_path / "lying").mkdir()
    rel = synthposes._write(job)[0]
    first = (tmp_path / rel).read_bytes()
    assert synthposes._write(job)[0] == rel and (tmp_path / rel).read_bytes() == first
    synthposes._write(job._replace(seed=1))
    assert (tmp_path / rel).read_bytes() != first


def test_cli_writes_a_set_and_rejects_bad_arguments(tmp_path: Path) -> None:
    r = run_module("models.synthposes", str(tmp_path / "p"), "--per-class", "1", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert "7 clips of 7 postures" in r.stdout
    bad = run_module("models.synthposes", str(tmp_path / "q"), "--per-class", "0")
    assert bad.returncode == 2 and "--per-class must be in 1..100000" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "q").exists()


def test_postures_written_as_an_action_datasets_labels(tmp_path: Path) -> None:
    """``--as``: only the postures named, that many clips each, labelled as the action classes
    name them; the same scenes as the full set of that seed."""
    plan = {"lying": ("lying", 2), "stand": ("other", 1), "sitting": ("other", 1)}
    n = synthposes.write_postures(tmp_path / "a", 0, seed=0, workers=1, as_labels=plan)
    with open(tmp_path / "a" / "segments.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert n == len(rows) == 4
    assert sorted((r["video"].split("/")[0], r["label"]) for r in rows) == [
        ("lying", "lying"),
        ("lying", "lying"),
        ("sitting", "other"),
        ("stand", "other"),
    ]
    assert (tmp_path / "a" / "classes.txt").read_text().split() == ["lying", "other"]
    assert not (tmp_path / "a" / "walk").exists()
    synthposes.write_postures(tmp_path / "full", 1, seed=0, workers=1)
    rel = "stand/v_stand_p00000.avi"
    assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "full" / rel).read_bytes()


def test_cli_as_writes_the_named_postures_and_rejects_unknown_ones(tmp_path: Path) -> None:
    r = run_module(
        "models.synthposes", str(tmp_path / "p"), "--as", "lying=lying:2,arm=hold:1", "--jobs", "1"
    )
    assert r.returncode == 0, r.stderr
    assert "3 clips of 2 postures" in r.stdout
    for bad in ("lyin=lying:2", "lying=lying", "lying=:2", "lying=lying:0", "lying=a:1,lying=b:1"):
        out = run_module("models.synthposes", str(tmp_path / "q"), "--as", bad)
        assert out.returncode == 2 and "expected" in out.stderr and bad.split(",")[-1] in out.stderr
        assert "Traceback" not in out.stderr and not (tmp_path / "q").exists()


def test_frames_writes_longer_clips_of_the_same_posture(tmp_path: Path) -> None:
    """``--frames 13``: each clip 13 frames (a 7x2 hyperframe reads 13) labelled whole, loaded
    as a dataset; bad counts refused, nothing written."""
    r = run_module(
        "models.synthposes",
        str(tmp_path / "p"),
        "--as",
        "lying=lying:2,crouch=other:2",
        "--frames",
        "13",
        "--jobs",
        "1",
    )
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "p" / "segments.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {(r["start_frame"], r["end_frame"]) for r in rows} == {("0", "12")}
    for row in rows:
        cap = cv2.VideoCapture(str(tmp_path / "p" / row["video"]))
        assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 13
        cap.release()
    ds = data.load(tmp_path / "p", val_fraction=0.5, test_fraction=0)
    assert len(ds.train) + len(ds.val) == 4
    for bad in ("0", "65"):
        out = run_module("models.synthposes", str(tmp_path / "q"), "--frames", bad)
        assert out.returncode == 2 and f"--frames must be in 1..64, found {bad}" in out.stderr
        assert "Traceback" not in out.stderr and not (tmp_path / "q").exists()
