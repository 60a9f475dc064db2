"""models/evaluate.py on a hand-built stream with known events and a model whose score is the
frame's brightness: every count, delay and false alarm is known in advance."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_hf.spec import HyperframeSpec, write_onnx_spec
from models.evaluation.events import MISSES
from tests.conftest import run_module

SPEC = HyperframeSpec(
    frames=1,
    stride=1,
    size=(32, 32),
    classes=("walk", "fall"),
    alert_classes=(("fall", 0.5),),
    arch="brightness",
    provenance=(("data", "none: tests/models/test_evaluate.py"),),
)
FPS, LENGTH = 25.0, 1000
# (first, impact) of each labelled fall, and the frames the video is white (scored as a fall)
FALLS = [(100, 110), (400, 410), (600, 610), (900, 905)]
WHITE = [(115, 130), (400, 405), (800, 810), (945, 950)]  # late, early, (none: missed), false, late


def brightness_model(path: Path) -> Path:
    """logit(fall) = (mean grey - 127.5) / 10, logit(walk) = 0: white frames score ~1."""
    n = helper.make_node
    nodes = [
        n("Cast", ["frames"], ["xf"], to=TensorProto.FLOAT),
        n("ReduceMean", ["xf", "axes"], ["m"], keepdims=0),
        n("Reshape", ["m", "col"], ["m2"]),
        n("Sub", ["m2", "mid"], ["d"]),
        n("Mul", ["d", "gain"], ["fall"]),
        n("Mul", ["fall", "zero"], ["walk"]),
        n("Concat", ["walk", "fall"], ["logits"], axis=1),
    ]
    consts = {
        "axes": np.array([1, 2, 3, 4], np.int64),
        "col": np.array([-1, 1], np.int64),
        "mid": np.array(127.5, np.float32),
        "gain": np.array(0.1, np.float32),
        "zero": np.array(0.0, np.float32),
    }
    graph = helper.make_graph(
        nodes,
        "brightness",
        [helper.make_tensor_value_info("frames", TensorProto.UINT8, ["N", 1, 32, 32, 3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    write_onnx_spec(model, SPEC)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def known(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("known")
    w = cv2.VideoWriter(str(root / "s.avi"), cv2.VideoWriter_fourcc(*"MJPG"), FPS, (64, 48))
    for i in range(LENGTH):
        white = any(a <= i <= b for a, b in WHITE)
        w.write(np.full((48, 64, 3), 255 if white else 0, np.uint8))
    w.release()
    rows, last = [], 0
    for a, b in FALLS:
        rows += [("s.avi", last, a - 1, "walk"), ("s.avi", a, b, "fall")]
        last = b + 1
    rows.append(("s.avi", last, LENGTH - 1, "walk"))
    with open(root / "segments.csv", "w", newline="") as f:
        csv.writer(f).writerows([("video", "start_frame", "end_frame", "label"), *rows])
    return brightness_model(root / "bright.onnx"), root


def test_counts_delays_and_false_alarms_on_a_known_stream(known, tmp_path: Path):
    model, streams = known
    r = run_module(
        "models.evaluate", str(model), str(streams), "--cooldown", "1", "--out", str(tmp_path)
    )
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "eval.json").read_text())
    p = report["classes"]["fall"]["operating"]
    # 2-of-3 at hop 1: an alert starts on the second white frame.
    # caught: (116-110)/25 late, (401-410)/25 early, (946-905)/25 = 1.64 s late (not in time);
    # missed: the fall at 600 (never white); false: the white burst at 800.
    assert (p["events"], p["caught"], p["in_time"], p["missed"], p["false_alarms"]) == (
        4,
        3,
        2,
        1,
        1,
    )
    assert p["delay_median"] == pytest.approx(6 / FPS)
    assert p["false_per_hour"] == pytest.approx(1 / (LENGTH / FPS / 3600))
    assert p["false_by_label"] == {"walk": 1}  # the burst at 800 is in a walk segment
    # each fall's peak from its first frame to 1 s after the impact: white (~1) but the missed one
    peaks = [(e["first"], e["peak"] > 0.99) for e in report["classes"]["fall"]["events"]]
    assert peaks == [(100, True), (400, True), (600, False), (900, False)]  # 945 is > 1 s late
    assert "2 of 4 events never reach 0.5" in r.stdout
    assert "(fall, operating: false alarms started on walk 1)" in r.stdout
    assert report["hours"] == pytest.approx(LENGTH / FPS / 3600)
    assert (tmp_path / "sweep.png").stat().st_size > 10_000
    assert "| fall | operating | 0.5 | 2/3 | 4 | 3 | 2 | 1 |" in r.stdout
    # each fall and each false alarm, to look them up in the video
    told = [(e["first"], e["delay"], e["missed_because"]) for e in p["outcomes"]["events"]]
    assert told == [
        (100, 6 / FPS, None),
        (400, -9 / FPS, None),
        (600, None, MISSES[0]),
        (900, 41 / FPS, MISSES[3]),
    ]
    assert p["outcomes"]["false_alarms"] == [{"stream": "s.avi", "frame": 801, "label": "walk"}]
    assert report["classes"]["fall"]["pose_seen"] is None  # it waits for no pose
    assert "its pose" not in r.stdout


def test_a_later_match_window_turns_a_late_alert_into_a_false_alarm(known, tmp_path: Path):
    model, streams = known
    r = run_module(
        "models.evaluate",
        str(model),
        str(streams),
        "--cooldown",
        "1",
        "--match",
        "1.0",
        "--k-of-n",
        "1/1",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    p = json.loads((tmp_path / "eval.json").read_text())["classes"]["fall"]["operating"]
    # 1-of-1: starts on the first white frame: 115, 400, 800, 945 (1.6 s > 1.0 s: false)
    assert (p["caught"], p["in_time"], p["false_alarms"]) == (2, 2, 2)
    assert p["false_by_label"] == {"walk": 2}
    assert p["delay_median"] == pytest.approx(((115 - 110) / FPS + (400 - 410) / FPS) / 2)


def test_a_rule_to_wait_for_a_pose_reaches_the_replay(known, tmp_path: Path):
    """--then fall=walk:0.5:1: each white burst is followed by dark frames (walk), so the first
    fall (white to 130) is caught once the walk follows, at 132 (0.88 s); and its event stays
    open while the walk (its pose) is seen, which is the rest of the stream: one start."""
    model, streams = known
    r = run_module(
        "models.evaluate",
        str(model),
        str(streams),
        "--cooldown",
        "1",
        "--then",
        "fall=walk:0.5:1",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["options"]["then"] == [
        {"cls": "fall", "pose": "walk", "threshold": 0.5, "within": 1.0}
    ]
    p = report["classes"]["fall"]["operating"]
    assert (p["caught"], p["in_time"], p["false_alarms"]) == (1, 1, 0)
    assert p["delay_median"] == pytest.approx((132 - 110) / FPS)
    assert "(fall: each alert waits for walk >= 0.5 within 1 s after it)" in r.stdout
    # the walk's 961 frames: 33 white ones (115-130, 800-810, 945-950) called fall
    seen = report["classes"]["fall"]["pose_seen"]
    assert (seen["hyperframes"], seen["right"], seen["called"]) == (
        961,
        928,
        {"walk": 928, "fall": 33},
    )
    assert (
        "(fall: its pose walk called walk on 97 % of 961 labelled hyperframes (fall 3 %); "
        "least on s.avi 97 % of 961)" in r.stdout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k-of-n", "3/2"], "--k-of-n must satisfy 1 <= k <= n, found 3/2"),
        (["--k-of-n", "two"], "expected K/N such as 2/3"),
    ],
)
def test_bad_options_are_one_line_errors(known, tmp_path: Path, args, message):
    model, streams = known
    r = run_module("models.evaluate", str(model), str(streams), *args, "--out", str(tmp_path))
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_two_stage_evaluation_counts_what_the_confirming_model_lets_through(known, tmp_path):
    """Confirmed by itself, the brightness model alerts exactly as alone; confirmed by a model
    that rejects everything, nothing is caught and nothing is a false alarm; the report's cost
    counts the screened hyperframes either way."""
    from tests.motion_model import constant_model

    model, streams = known
    onnx.save(constant_model(SPEC, [5.0, -5.0]), tmp_path / "reject.onnx")
    points = {}
    for name, confirm in (("self", model), ("reject", tmp_path / "reject.onnx")):
        out = tmp_path / name
        r = run_module(
            "models.evaluate",
            str(model),
            str(streams),
            "--cooldown",
            "1",
            "--confirm",
            str(confirm),
            "--out",
            str(out),
        )
        assert r.returncode == 0, r.stderr
        report = json.loads((out / "eval.json").read_text())
        p = report["classes"]["fall"]["operating"]
        points[name] = (p["caught"], p["in_time"], p["false_alarms"])
        stages = report["cost"]["two_stage"]
        assert stages["screened"] == sum(b - a + 1 for a, b in WHITE)  # the white frames
        assert "screened" in r.stdout.splitlines()[0]
    assert points == {"self": (3, 2, 1), "reject": (0, 0, 0)}


@pytest.fixture(scope="module")
def two_cameras(known, tmp_path_factory) -> Path:
    """The known stream as camera "hall", and a dark one with a fall as camera "yard"."""
    _, src = known
    root = tmp_path_factory.mktemp("two")
    (root / "s.avi").write_bytes((src / "s.avi").read_bytes())
    w = cv2.VideoWriter(str(root / "t.avi"), cv2.VideoWriter_fourcc(*"MJPG"), FPS, (64, 48))
    for _ in range(250):
        w.write(np.zeros((48, 64, 3), np.uint8))
    w.release()
    rows = (src / "segments.csv").read_text() + "t.avi,0,99,walk\nt.avi,100,110,fall\n"
    (root / "segments.csv").write_text(rows)
    (root / "videos.csv").write_text("video,camera,light\ns.avi,hall,day\nt.avi,yard,\n")
    return root


def test_counts_broken_down_by_a_fact_about_each_video(known, two_cameras, tmp_path: Path):
    model, _ = known
    r = run_module(
        "models.evaluate",
        str(model),
        str(two_cameras),
        "--cooldown",
        "1",
        "--by",
        "camera",
        "--by",
        "light",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    p = json.loads((tmp_path / "eval.json").read_text())["classes"]["fall"]["operating"]
    hall, yard = p["by"]["camera"]["hall"], p["by"]["camera"]["yard"]
    assert (hall["videos"], hall["events"], hall["in_time"], hall["false_alarms"]) == (1, 4, 2, 1)
    assert (yard["videos"], yard["events"], yard["in_time"], yard["false_alarms"]) == (1, 1, 0, 0)
    assert hall["false_per_hour"] == pytest.approx(1 / (LENGTH / FPS / 3600))
    assert set(p["by"]["light"]) == {"day", "(empty)"}
    assert (
        "(fall, operating, by camera: hall 2 of 4 in time, 90.00 false/h; yard 0 of 1 in time, 0.00 false/h)"
        in r.stdout
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda root: (root / "videos.csv").unlink(), "videos.csv: not found; --by needs a CSV"),
        (
            lambda root: (root / "videos.csv").write_text("video,room\ns.avi,a\nt.avi,b\n"),
            "expected the columns video and ['camera'], found ['video', 'room']",
        ),
        (
            lambda root: (root / "videos.csv").write_text("video,camera\ns.avi,a\n"),
            "videos.csv: no row for 1 video(s) of segments.csv, e.g. t.avi; add one per video",
        ),
        (
            lambda root: (root / "videos.csv").write_text("video,camera\ns.avi,a\ns.avi,b\n"),
            "videos.csv:3: video s.avi is listed twice",
        ),
    ],
)
def test_a_bad_videos_csv_is_one_line_before_any_video_is_scored(
    known, two_cameras, tmp_path: Path, edit, message
):
    model, _ = known
    root = tmp_path / "streams"
    root.mkdir()
    for f in two_cameras.iterdir():
        (root / f.name).symlink_to(f)
    (root / "videos.csv").unlink()
    (root / "videos.csv").write_text((two_cameras / "videos.csv").read_text())
    edit(root)
    r = run_module(
        "models.evaluate", str(model), str(root), "--by", "camera", "--out", str(tmp_path / "out")
    )
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_several_folders_are_one_set_with_their_videos_named_by_folder(
    known, two_cameras, tmp_path
):
    model, one = known
    r = run_module(
        "models.evaluate",
        str(model),
        str(one),
        str(two_cameras),
        "--cooldown",
        "1",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "eval.json").read_text())
    p = report["classes"]["fall"]["operating"]
    # the known stream twice (4 falls, 2 in time, 1 false alarm each) and the dark one's fall
    assert (report["videos"], p["events"], p["in_time"], p["false_alarms"]) == (3, 9, 4, 2)
    assert sorted({e["stream"] for e in p["outcomes"]["events"]}) == [
        f"{one}/s.avi",
        f"{two_cameras}/s.avi",
        f"{two_cameras}/t.avi",
    ]
    again = run_module(
        "models.evaluate", str(model), str(one), str(one) + "/", "--out", str(tmp_path / "again")
    )
    assert again.returncode == 2 and f"streams folder {one} is given twice" in again.stderr


def test_a_point_chosen_on_one_folder_is_counted_on_the_others(known, two_cameras, tmp_path):
    """--choose-on ONE: the recommended point is chosen and counted on ONE's stream alone (4
    falls), then counted again on the other folder's (the same stream, and a dark one whose fall
    no threshold catches): the same falls in time and false alarms, one fall more."""
    model, one = known
    r = run_module(
        "models.evaluate",
        str(model),
        str(one),
        str(two_cameras),
        "--cooldown",
        "1",
        "--choose-on",
        str(one),
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["choose_on"] == [str(one)]
    rec = report["classes"]["fall"]["recommended"]
    assert {e["stream"] for e in rec["outcomes"]["events"]} == {f"{one}/s.avi"}
    held = rec["held_out"]
    assert (rec["events"], held["events"]) == (4, 5)
    assert (held["in_time"], held["false_alarms"]) == (rec["in_time"], rec["false_alarms"])
    assert held["threshold"] == rec["threshold"] and held["wait"] == rec["wait"]
    assert f"chosen on {one} and counted on the other streams: {held['in_time']} of 5" in r.stdout


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("other", "--choose-on {}: expected one of the STREAMS folders, found another"),
        ("all", "--choose-on: expected some STREAMS folders left to count the point on"),
    ],
)
def test_choose_on_needs_some_of_the_folders_and_not_all(known, tmp_path, which, message):
    model, one = known
    folder = tmp_path / "elsewhere" if which == "other" else one
    r = run_module(
        "models.evaluate",
        str(model),
        str(one),
        "--choose-on",
        str(folder),
        "--out",
        str(tmp_path / "out"),
    )
    assert r.returncode == 2 and message.format(folder) in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_folder_without_segments_is_one_line_before_any_video_is_scored(known, tmp_path):
    model, one = known
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_module(
        "models.evaluate", str(model), str(one), str(empty), "--out", str(tmp_path / "out")
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == (
        f"models.evaluate: error: {empty}/segments.csv: not found; a folder of labelled videos "
        "needs a segments.csv (video,start_frame,end_frame,label)"
    )  # one line, and no video of the first folder was scored (its progress goes to stderr)
    assert not (tmp_path / "out").exists()
