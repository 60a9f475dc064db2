"""models.evaluation.clips: what the alert does on validation clips labelled whole, forward and
backwards, and the lowest threshold that keeps every clip that is not the alert quiet."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import cv2
import numpy as np

from edge_hf.backends import load_backend
from edge_hf.runtime import DEMO_MODEL
from models.data import Video
from models.evaluation.clips import alerting, check, lines, reversed_copy, summarise
from models.evaluation.events import Stream

GRID = (0.5, 0.8, 0.9, 0.95)
T, F = True, False


def test_counts_at_the_threshold_and_the_quiet_point():
    clips = [
        ("fall", [T, T, T, F]),
        ("fall", [T, T, F, F]),
        ("lie_down", [T, T, F, F]),
        ("wave", [F, F, F, F]),
    ]
    r = summarise("fall", GRID, 0.8, (2, 3), clips, backwards=[[T, F, F, F], [F, F, F, F]])
    assert r["clips"] == {
        "fall": {"alert": 2, "of": 2},
        "lie_down": {"alert": 1, "of": 1},
        "wave": {"alert": 0, "of": 1},
    }
    assert r["backwards"] == {"alert": 0, "of": 2}
    # the lie-down alerts up to 0.8, the reversed fall up to 0.5: 0.9 is quiet, one fall there
    assert r["quiet"] == {"threshold": 0.9, "alert": 1, "of": 2}
    (text,) = [t for t in lines({"fall": r}) if t]
    assert "2 of 2 fall clips alert; so do 1 of 2 clips of other classes (lie_down 1)" in text
    assert "0 of the 2 fall clips played backwards" in text
    assert "is 0.9, where 1 of 2 fall clips still do" in text and "--threshold fall=P" in text


def test_a_reversed_fall_that_always_alerts_leaves_no_quiet_threshold():
    clips = [("fall", [T, T, T, T]), ("wave", [F, F, F, F])]
    r = summarise("fall", GRID, 0.8, (2, 3), clips, backwards=[[T, T, T, T]])
    assert r["quiet"] is None and r["backwards"] == {"alert": 1, "of": 1}
    assert "No threshold keeps all of those quiet" in lines({"fall": r})[1]


def test_a_quiet_model_says_nothing_about_raising_it():
    r = summarise("fall", GRID, 0.8, (2, 3), [("fall", [T, T, F, F]), ("wave", [T, F, F, F])], [])
    assert r["quiet"] == {"threshold": 0.8, "alert": 1, "of": 1}
    assert "lowest threshold" not in lines({"fall": r})[1]
    assert "Fewer than half" not in lines({"fall": r})[1]  # 1 of 1


def test_a_model_that_misses_its_own_alert_clips_says_so():
    clips = [("fall", [T, F, F, F]), ("fall", [T, T, F, F]), ("fall", [F, F, F, F])]
    r = summarise("fall", GRID, 0.8, (2, 3), [*clips, ("wave", [F, F, F, F])], [])
    assert (
        "Fewer than half of the fall clips alert: expect most falls to be missed"
        in (lines({"fall": r})[1])
    )


def test_the_runtimes_alert_logic_decides_per_threshold():
    fall = np.array([0.1, 0.85, 0.92, 0.1, 0.1, 0.99, 0.1], np.float32)  # 2 of 3 up to 0.85
    probs = np.stack([fall, 1 - fall], 1)
    s = Stream("clip", 25.0, 9, np.arange(2, 9), probs, {}, classes=("fall", "wave"))
    assert alerting(s, "fall", GRID, None, (2, 3)) == [T, T, F, F]
    assert alerting(s, "fall", GRID, None, (1, 1)) == [T, T, T, T]


def test_a_reversed_copy_plays_the_frames_backwards(tmp_path: Path):
    src = tmp_path / "clip.avi"
    out = cv2.VideoWriter(str(src), cv2.VideoWriter_fourcc(*"MJPG"), 12.5, (32, 24))
    for i in range(10):
        out.write(np.full((24, 32, 3), 20 * i + 10, np.uint8))
    out.release()
    cap = cv2.VideoCapture(str(reversed_copy(src, tmp_path / "rev.avi")))
    means = []
    while (got := cap.read())[0]:
        means.append(got[1].mean())
    assert cap.get(cv2.CAP_PROP_FPS) == 12.5
    np.testing.assert_allclose(means, [20 * i + 10 for i in reversed(range(10))], atol=2)


def _clip(path: Path, frames: int) -> Path:
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, (96, 72))
    for i in range(frames):
        out.write(np.full((72, 96, 3), 8 * i, np.uint8))
    out.release()
    return path


def test_clips_too_short_for_a_hyperframe_are_left_out_and_counted(tmp_path: Path):
    """The shipped demo through the runtime: a clip of 2 frames (the trainer skips those too)
    is left out, forward and backwards, and the others are counted."""
    spec = load_backend(DEMO_MODEL).spec
    fall, other = spec.classes.index("fall"), spec.classes.index("other")
    videos = (
        Video(_clip(tmp_path / "a.avi", 20), fall),
        Video(_clip(tmp_path / "b.avi", 2), fall),
        Video(_clip(tmp_path / "c.avi", 20), other),
    )
    r = check(DEMO_MODEL, spec, videos, spec.classes)["fall"]
    assert r["left_out"] == 1
    assert {k: v["of"] for k, v in r["clips"].items()} == {"fall": 1, "other": 1}
    assert r["backwards"]["of"] == 1
    assert "1 clip(s) left out: shorter than one hyperframe or unreadable" in lines({"fall": r})[1]
    assert check(DEMO_MODEL, spec, (), spec.classes) is None


def test_the_sample_is_evenly_spaced_and_bounded_per_class_and_in_all(monkeypatch):
    import models.evaluation.clips as clips

    many = [Video(Path(f"a{i:03d}.avi"), 0) for i in range(100)]
    few = [Video(Path(f"b{i}.avi"), 1) for i in range(5)]
    got = clips.sample(many + few)
    assert [v.path.name for v in got if v.labels == 1] == [v.path.name for v in few]
    a = [int(v.path.stem[1:]) for v in got if v.labels == 0]
    assert len(a) == clips.PER_CLASS and a[0] == 0 and a[-1] >= 95
    assert max(np.diff(a)) - min(np.diff(a)) <= 1  # evenly spaced
    monkeypatch.setattr(clips, "TOTAL", 10)  # two classes: 5 of each
    assert Counter(v.labels for v in clips.sample(many + few)) == {0: 5, 1: 5}
