"""Tests for edge_hf/synth/: procedural scenes where one frame is ambiguous and motion is not."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tracemalloc
from contextlib import nullcontext
from pathlib import Path

import cv2
import numpy as np
import pytest

from edge_hf import synth

ROOT = Path(__file__).resolve().parents[1]
SIZE = (360, 640)


def _scene(name: str, seed: int = 0, fps: float = 25.0, **overrides) -> synth.Scene:
    params = dataclasses.replace(synth.SceneParams.sample(seed), **overrides)
    return synth.make_scene(name, size=SIZE, fps=fps, params=params)


def _frame(scene: synth.Scene, index: int) -> np.ndarray:
    out = np.empty((*scene.size, 3), np.uint8)
    scene.render(index, out)
    return out


def _mask(scene: synth.Scene, frame: np.ndarray) -> np.ndarray:
    """Figure pixels: the figure's colour, give or take noise (backgrounds keep >= 60 away)."""
    color = np.array(scene.params.color)
    return cv2.inRange(frame, np.clip(color - 30, 0, 255), np.clip(color + 30, 0, 255)) > 0


def _bbox(mask: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(mask)
    return int(ys.min()), int(ys.max()), int(xs.min()), int(xs.max())


def _shape(mask: np.ndarray) -> np.ndarray:
    """The silhouette cropped to its box and scaled to 32x64: position and size left out."""
    y0, y1, x0, x1 = _bbox(mask)
    crop = mask[y0 : y1 + 1, x0 : x1 + 1].astype(np.float32)
    return cv2.resize(crop, (32, 64), interpolation=cv2.INTER_AREA) > 0.5


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / (a | b).sum())


def test_names() -> None:
    assert synth.ACTIONS == ("walk_left", "walk_right", "wave", "hold", "fall", "lie_down")
    assert synth.SCENES[:-1] == synth.ACTIONS and synth.SCENES[-1] == "demo"


@pytest.mark.parametrize("name", synth.SCENES)
def test_same_seed_same_frames_other_seed_other_frames(name: str) -> None:
    a, b, c = (synth.make_scene(name, seed=s) for s in (3, 3, 4))
    assert a.length == b.length and a.segments() == b.segments()
    for i in (0, a.length // 2, a.length - 1):
        assert np.array_equal(_frame(a, i), _frame(b, i))
        assert not np.array_equal(_frame(a, i), _frame(c, i))


@pytest.mark.parametrize("name", ["demo", "walk_right", "fall"])
def test_random_access_equals_sequential(name: str) -> None:
    seq, rnd = synth.make_scene(name, seed=5), synth.make_scene(name, seed=5)
    n = min(seq.length, 120)
    frames = [_frame(seq, i) for i in range(n)]
    for i in (97 % n, 3, n - 1, 0, 41 % n):
        assert np.array_equal(_frame(rnd, i), frames[i])
        assert np.array_equal(_frame(rnd, i + 2 * rnd.length), frames[i])  # wraps
    assert rnd.label_at(3 + rnd.length) == rnd.label_at(3)


def test_render_draws_in_place_without_allocating() -> None:
    scene = synth.make_scene("demo", seed=1)
    assert scene.params.noise > 0 and scene.params.jitter > 0  # every path of render runs
    out = np.zeros((*SIZE, 3), np.uint8)
    assert scene.render(10, out) is None and out.any()
    tracemalloc.start()
    try:
        for i in range(20):
            scene.render(i, out)
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for i in range(200):
            scene.render(i * 7, out)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert current - base < 4096
    assert peak - base < 64 * 1024  # one temporary frame would be 675 KiB


@pytest.mark.parametrize(
    "out", [np.zeros((360, 640, 3), np.float32), np.zeros((640, 360, 3), np.uint8)]
)
def test_render_rejects_a_wrong_buffer(out: np.ndarray) -> None:
    with pytest.raises(ValueError, match=r"\(360, 640, 3\)"):
        synth.make_scene("hold").render(0, out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_walkers_move_apart_but_a_single_frame_is_ambiguous(seed: int) -> None:
    left, right = (
        synth.make_scene("walk_left", seed=seed),
        synth.make_scene("walk_right", seed=seed),
    )
    i = left.length // 2
    for scene, sign in ((left, -1), (right, 1)):
        x0 = np.nonzero(_mask(scene, _frame(scene, i)))[1].mean()
        x5 = np.nonzero(_mask(scene, _frame(scene, i + 5)))[1].mean()
        assert sign * (x5 - x0) > 5, (scene.name, x0, x5)
    # One leftward frame matches some rightward frame in shape (fine time steps, clean camera),
    # far better than it matches a figure standing still.
    clean = {"fps": 100.0, "jitter": 0.0, "noise": 0.0}
    left, right = (_scene(n, seed, **clean) for n in ("walk_left", "walk_right"))
    stand = _scene("fall", seed, **clean)
    probe = _shape(_mask(left, _frame(left, left.length // 2 + 7)))
    best = max(_iou(probe, _shape(_mask(right, _frame(right, j)))) for j in range(120))
    assert best > 0.9 > _iou(probe, _shape(_mask(stand, _frame(stand, 0)))) + 0.2


def test_wave_passes_through_the_held_pose() -> None:
    wave, hold = (_scene(n, 6, fps=100.0, jitter=0.0, noise=0.0) for n in ("wave", "hold"))
    held = [_mask(hold, _frame(hold, i)) for i in (0, 30, 60)]
    assert all(np.array_equal(held[0], m) for m in held)  # hold is still
    waving = [_mask(wave, _frame(wave, i)) for i in range(0, int(100 / wave.params.wave_hz), 2)]
    assert min(_iou(waving[0], m) for m in waving) < 0.9  # wave is not
    assert max(_iou(held[0], m) for m in waving) > 0.9


def _drop_seconds(scene: synth.Scene) -> float:
    """Seconds from the head leaving its standing height to reaching its lying height."""
    tops = np.array([_bbox(_mask(scene, _frame(scene, i)))[0] for i in range(scene.length)])
    tol = 0.01 * scene.params.height * scene.size[0] + 1.0
    start = np.argmax(tops > tops[0] + tol)
    end = np.argmax(tops >= tops[-1] - tol)
    return (end - start) / scene.fps


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fall_is_fast_and_lie_down_is_slow(seed: int) -> None:
    fall, lie = (_scene(name, seed, jitter=0.0) for name in ("fall", "lie_down"))
    assert 0 < _drop_seconds(fall) < 1.0
    assert _drop_seconds(lie) > 2.0
    for scene in (fall, lie):  # same start and end pose; every frame carries the action's name
        assert scene.segments() == [(0, scene.length - 1, scene.name)]
        assert {scene.label_at(i) for i in range(scene.length)} == {scene.name}
        assert 2.0 <= scene.length / scene.fps <= 5.5
    assert np.array_equal(_mask(fall, _frame(fall, 0)), _mask(lie, _frame(lie, 0)))
    assert _iou(_mask(fall, _frame(fall, -1)), _mask(lie, _frame(lie, -1))) > 0.8


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_demo_segments_cover_the_loop(seed: int) -> None:
    demo = synth.make_scene("demo", seed=seed)
    segs = demo.segments()
    assert segs[0][0] == 0 and segs[-1][1] == demo.length - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(segs, segs[1:], strict=False))
    assert {label for *_, label in segs} <= set(synth.DEMO_LABELS)
    falls = [e - s + 1 for s, e, label in segs if label == "fall"]
    lie_downs = [e - s + 1 for s, e, label in segs if label == "lie_down"]
    assert falls and lie_downs
    assert max(falls) < demo.fps and min(lie_downs) > 2 * demo.fps  # < 1 s and > 2 s
    for s, e, label in segs:
        assert demo.label_at(s) == demo.label_at(e) == label
    assert np.array_equal(_frame(demo, 0), _frame(demo, demo.length))  # the index wraps
    # the figure really goes down during a fall
    s, e, _ = next(seg for seg in segs if seg[2] == "fall")
    top0, top1 = (_bbox(_mask(demo, _frame(demo, i)))[0] for i in (s - 1, e))
    assert top1 - top0 > 0.5 * demo.params.height * demo.size[0]


@pytest.mark.parametrize(
    ("kwargs", "expect"),
    [
        ({"name": "fall"}, nullcontext()),
        ({"name": "falling"}, pytest.raises(ValueError, match="'falling'.*walk_left.*demo")),
        ({"name": "demo", "size": (10, 640)}, pytest.raises(ValueError, match="size")),
        ({"name": "demo", "fps": 0.0}, pytest.raises(ValueError, match="fps")),
        ({"name": "demo", "seed": -1}, pytest.raises(ValueError, match="seed")),
        (
            {
                "name": "wave",
                "params": dataclasses.replace(synth.SceneParams.sample(0), height=2.0),
            },
            pytest.raises(ValueError, match="SceneParams.height"),
        ),
    ],
)
def test_make_scene_validates(kwargs: dict, expect) -> None:
    with expect:
        synth.make_scene(**kwargs)


def test_write_clip_reads_back(tmp_path: Path) -> None:
    scene = synth.make_scene("fall", seed=2, size=(96, 128))
    path = tmp_path / "fall.mp4"
    synth.write_clip(path, scene, 30)
    cap = cv2.VideoCapture(str(path))
    try:
        assert cap.isOpened()
        frames = []
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(frame)
    finally:
        cap.release()
    assert len(frames) == 30
    assert frames[0].shape == (96, 128, 3)


def test_write_clip_names_a_path_it_cannot_open(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "clip.mp4"
    with pytest.raises(OSError, match="missing"):
        synth.write_clip(path, synth.make_scene("wave", size=(96, 128)), 5)


def test_synth_never_imports_torch() -> None:
    code = "import sys; sys.modules['torch'] = None; import edge_hf.synth"  # import torch fails
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.parametrize("preset", ["easy", "real"])
def test_mixed_speed_falls_stay_down_or_get_up_and_differ_only_after(preset):
    """fall_stay / fall_recover of one seed: the same frames until the get-up, the same length;
    one ends lying, the other standing; over seeds the fall is fast and slow."""
    durations = []
    for seed in range(8):
        stay, up = (
            synth.make_scene(n, seed=seed, size=(120, 160), preset=preset)
            for n in synth.MIXED_SPEED
        )
        assert stay.length == up.length
        phases = up.phases()
        labels = [lab for *_, lab in phases]
        assert labels[-4:] == ["fall", "lying", "get_up", "stand"], phases
        get_up = phases[-2][0]
        assert [lab for *_, lab in stay.phases()][-2:] == ["fall", "lying"]
        for i in (0, get_up - 1):
            assert np.array_equal(_render(stay, i), _render(up, i))
        assert not np.array_equal(_render(stay, up.length - 1), _render(up, up.length - 1))
        assert stay.pose(stay.length - 1).tilt > 1.5 and up.pose(up.length - 1).tilt == 0.0
        assert stay.segments() == [(0, stay.length - 1, "fall_stay")]
        start, end, _ = phases[-4]
        durations.append((end - start + 1) / up.fps)
    assert min(durations) < 0.5 and max(durations) > 0.9  # the same action, fast and slow


def _render(scene: synth.Scene, i: int) -> np.ndarray:
    out = np.empty((*scene.size, 3), np.uint8)
    scene.render(i, out)
    return out


@pytest.mark.parametrize(("figure", "want"), [((250, 250, 250), 250.0), ((30, 40, 50), 40.0)])
def test_figure_contrast_is_the_colour_distance_to_the_band_it_stands_in(figure, want) -> None:
    """A flat black scene: the contrast is the figure colour's mean over B, G, R."""
    black = ((0, 0, 0), (0, 0, 0))
    scene = _scene("walk_left", background="flat", bg_colors=black, color=figure, noise=0.0)
    assert scene.figure_contrast == pytest.approx(want)


def test_figure_contrast_reads_the_wall_behind_the_figure_not_the_floor() -> None:
    """A grey wall over a black floor: a figure of the wall's grey has no contrast at all."""
    grey = (100, 100, 100)
    scene = _scene(
        "walk_left",
        background="shapes",
        shapes=0,
        bg_colors=(grey, (0, 0, 0)),
        color=grey,
        noise=0.0,
    )
    assert scene.figure_contrast == pytest.approx(0.0)
