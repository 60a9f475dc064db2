"""export/heldout.py: an export's files measured on every video of a dataset the model never
saw, INT8's drop with a bootstrap interval. The counts on hand-built logits, then the real
command on the tiny export and a dataset written with another seed (tests/export/conftest.py)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from export import heldout
from export.data import Hyperframes, Unseen
from export.heldout import compare, per_class
from models.errors import BadArguments
from tests.conftest import run_module

CLASSES = 3


def _frames(videos: int, windows: int) -> Hyperframes:
    clip = np.repeat(np.arange(videos), windows)
    y = np.repeat(np.arange(videos) % CLASSES, windows)
    return Hyperframes(np.zeros((len(y), 1), np.uint8), y, clip)


def _logits(hf: Hyperframes, wrong: set[int]) -> np.ndarray:
    """Every window right, but the windows of the videos in ``wrong`` one class off."""
    pred = np.where(np.isin(hf.clip, list(wrong)), (hf.y + 1) % CLASSES, hf.y)
    return np.eye(CLASSES, dtype=np.float32)[pred]


def test_the_drop_counts_the_videos_each_format_gets_right():
    hf = _frames(20, 4)
    fp32 = _logits(hf, {0})
    int8 = _logits(hf, {1, 2, 3})  # loses 1, 2, 3 and wins back 0: 2 of 20 videos net
    c = compare(hf, fp32, int8, video_level=True)
    assert c["video"]["drop"] == pytest.approx(10.0)
    assert c["window"]["drop"] == pytest.approx(10.0)  # every window of a video goes with it
    assert (c["video"]["only_fp32"], c["video"]["only_int8"]) == (3, 1)
    lo, hi = c["video"]["interval"]
    assert lo < 10.0 < hi
    assert compare(hf, fp32, int8, video_level=True) == c  # the same draws every time
    many = _frames(200, 4)  # the same story ten times over: the same drop, known more closely
    wrong = {v for k in range(10) for v in (20 * k + 1, 20 * k + 2, 20 * k + 3)}
    c10 = compare(many, _logits(many, set(range(0, 200, 20))), _logits(many, wrong), True)
    assert c10["video"]["drop"] == pytest.approx(10.0)
    lo10, hi10 = c10["video"]["interval"]
    assert lo < lo10 < 10.0 < hi10 < hi and hi10 - lo10 < (hi - lo) / 2


def test_identical_formats_drop_nothing_with_no_doubt():
    hf = _frames(12, 3)
    same = _logits(hf, {4, 7})
    c = compare(hf, same, same.copy(), video_level=True)
    assert c["video"] == {"drop": 0.0, "interval": [0.0, 0.0], "only_fp32": 0, "only_int8": 0}
    assert c["window"] == {"drop": 0.0, "interval": [0.0, 0.0]}


def test_windows_alone_when_labels_are_per_frame():
    hf = _frames(6, 5)
    fp32, int8 = _logits(hf, set()), _logits(hf, set())
    int8[0] = np.roll(int8[0], 1)  # one window of thirty
    c = compare(hf, fp32, int8, video_level=False)
    assert set(c) == {"window"} and c["window"]["drop"] == pytest.approx(100 / 30, abs=0.01)


def test_per_class_counts_each_class_and_what_its_misses_were_taken_for():
    hf = _frames(12, 3)  # classes 0, 1, 2 in turn: four videos each
    logits = _logits(hf, {1, 4, 7, 2})  # three of class 1 called 2, one of class 2 called 0
    got = per_class(logits, hf, ("a", "b", "c"))
    assert got == {
        "a": {"videos": 4, "right": 4, "taken_for": {}},
        "b": {"videos": 4, "right": 1, "taken_for": {"c": 3}},
        "c": {"videos": 4, "right": 3, "taken_for": {"a": 1}},
    }
    logits[np.flatnonzero(hf.clip == 4)[0]] = np.eye(CLASSES)[1]  # one window of 3: still c
    assert per_class(logits, hf, ("a", "b", "c"))["b"]["right"] == 1
    logits[hf.clip == 4] = 0.5 * np.eye(CLASSES)[1] + 0.4 * np.eye(CLASSES)[2]
    assert per_class(logits, hf, ("a", "b", "c"))["b"] == {
        "videos": 4,
        "right": 2,
        "taken_for": {"c": 2},
    }


def _run(*args: str):
    """``python -m export.heldout ARGS`` as a real subprocess."""
    return run_module("export.heldout", *args, timeout=300)


def _run_here(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command's ``main`` in this process, its output captured: what it prints and
    returns is what the subprocess gives (the test above runs that), without 5 s of start-up
    (torch, OpenVINO) for each of the cases below."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = heldout.main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_the_command_measures_every_file_on_every_video(exported: Path, unseen: Path, tmp_path):
    out = tmp_path / "heldout.json"
    r = _run(str(exported), str(unseen), "--json", str(out))
    assert r.returncode == 0, r.stderr
    got = json.loads(out.read_text())
    assert got["videos"] == 12 and got["per_video"] and got["left_out"] == {}
    assert set(got["formats"]) == {"onnx", "openvino", "openvino-int8"}
    assert got["formats"]["onnx"] == got["formats"]["openvino"]  # both FP32 of one graph
    c = got["int8"]
    top1 = {n: row["top1"] for n, row in got["formats"].items()}
    drop = 100 * (top1["openvino"] - top1["openvino-int8"])  # the JSON keeps two decimals
    assert c["video"]["drop"] == pytest.approx(drop, abs=0.005 + 1e-9)
    assert c["video"]["only_fp32"] - c["video"]["only_int8"] == round(c["video"]["drop"] * 0.12)
    assert 0.0 <= c["alert_agreement"] <= 1.0
    assert r.stdout.startswith(f"held out: {unseen} (12 videos, ")
    assert f"| OpenVINO INT8 | {top1['openvino-int8']:.3f} |" in r.stdout
    classes = got["formats"]["onnx"]["per_class"]
    assert sum(c["right"] for c in classes.values()) == round(12 * top1["onnx"])
    for name, c in classes.items():
        assert c["right"] + sum(c["taken_for"].values()) == c["videos"]
        assert f"- {name}: {c['right']} / {c['videos']}" in r.stdout


def test_classes_the_model_does_not_know_are_left_out_and_named(
    exported: Path, unseen: Path, tmp_path
):
    root = tmp_path / "folders"  # folder per class: two known classes and one it never had
    for cls in ("fall", "wave", "juggle"):
        (root / cls).mkdir(parents=True)
        src = sorted((unseen / ("hold" if cls == "juggle" else cls)).glob("*.avi"))
        for v in src:
            shutil.copy(v, root / cls / v.name)
    r = _run_here(str(exported), str(root), "--json", str(tmp_path / "h.json"))
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "h.json").read_text())
    assert got["videos"] == 4 and got["left_out"] == {"juggle": 2}
    assert "left out, of classes the model does not know: 2 juggle" in r.stdout


@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("trained-on", 2, "which this model was trained on; pass a dataset it never saw"),
        ("a-copy", 2, "24 videos of"),
        ("no-report", 3, "not an export folder (no report.json)"),
        ("other-classes", 4, "pass a dataset of the same classes"),
        ("json-folder-missing", 5, "does not exist; create it first"),
        ("by-unknown-column", 4, "expected the columns video and ['colour']"),
        ("by-no-facts", 4, "videos.csv: not found; --by needs a CSV there"),
    ],
)
def test_bad_input_is_one_line_and_its_exit_code(
    exported: Path, unseen: Path, tiny_actions: Path, tmp_path, case, code, words
):
    folder, data, extra = str(exported), str(unseen), []
    if case == "trained-on":
        data = json.loads((exported / "report.json").read_text())["checkpoint"]["config"]["data"]
        assert Path(data).resolve() == tiny_actions.resolve()
    elif case == "a-copy":  # another folder, the same files: caught by their contents
        data = str(shutil.copytree(tiny_actions, tmp_path / "copy"))
    elif case == "no-report":
        folder = str(tmp_path)
    elif case == "other-classes":
        (tmp_path / "juggle").mkdir()
        shutil.copy(next(unseen.glob("hold/*.avi")), tmp_path / "juggle" / "a.avi")
        data = str(tmp_path)
    elif case == "by-unknown-column":
        extra = ["--by", "colour", "--json", str(tmp_path / "h.json")]
    elif case == "by-no-facts":
        data = str(shutil.copytree(unseen, tmp_path / "no-facts"))
        (tmp_path / "no-facts" / "videos.csv").unlink()
        extra = ["--by", "figure", "--json", str(tmp_path / "h.json")]
    else:
        extra = ["--json", str(tmp_path / "nowhere" / "h.json")]
    r = _run_here(folder, data, *extra)
    assert r.returncode == code, r.stderr
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "h.json").exists()


def test_by_counts_top1_per_group_of_videos_alike_in_the_datasets_facts(
    exported: Path, unseen: Path, tmp_path
):
    out = tmp_path / "h.json"
    r = _run_here(
        str(exported), str(unseen), "--by", "figure", "--by", "contrast", "--json", str(out)
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(out.read_text())
    rows = list(csv.DictReader((unseen / "videos.csv").open()))  # models.synthdata wrote it
    want = Counter((row["figure"], row["contrast"]) for row in rows)
    by = got["by"]
    assert by["columns"] == ["figure", "contrast"] and len(rows) == 12
    assert {tuple(g["values"]): g["videos"] for g in by["groups"]} == dict(want)
    for name, row in got["formats"].items():
        assert sum(g["right"][name] for g in by["groups"]) == round(12 * row["top1"])
    assert "per video by figure, contrast:" in r.stdout
    misses: Counter = Counter()  # what FP32 took each group's misses for, summed: per class's
    for g in by["groups"]:
        right = g["right"]["onnx"]
        assert f"| {', '.join(g['values'])} | {right} / {g['videos']} (" in r.stdout
        assert right + sum(g["taken_for"].values()) == g["videos"]
        misses.update(g["taken_for"])
    per_class = got["formats"]["onnx"]["per_class"].values()
    assert misses == sum((Counter(c["taken_for"]) for c in per_class), Counter())


def test_videos_the_model_was_trained_on_are_found_by_their_contents(
    unseen: Path, tiny_actions: Path, tmp_path
):
    from export.heldout import seen

    root = tmp_path / "mixed"
    for cls in ("fall", "wave"):
        shutil.copytree(unseen / cls, root / cls)
    trained = sorted((tiny_actions / "fall").glob("*.avi"))[0]
    shutil.copy(trained, root / "fall" / "renamed.avi")
    assert seen(root, tiny_actions) == 1
    assert seen(unseen, tiny_actions) == 0
    assert seen(tiny_actions, tiny_actions) == 24
    assert seen(root, tmp_path / "gone") == 0  # the training data is not on this machine


def test_the_export_measures_its_files_on_unseen_videos_too(
    tuned_export, unseen_too: Path, tiny_actions: Path
):
    from export.__main__ import main

    out, stdout = tuned_export
    h = json.loads((out / "report.json").read_text())["held_out"]
    # the FP32 IR INT8 was made from is measured too, though not shipped
    assert set(h["formats"]) == {"onnx", "openvino", "openvino-int8"}
    assert not (out / "model.xml").exists()
    assert h["videos"] == 12 and h["int8"]["against"] == "openvino"
    card = (out / "MODEL_CARD.md").read_text()
    assert "## On videos it never saw" in card and f"held out: {unseen_too} (12 videos" in card
    assert f"held out: {unseen_too} (12 videos" in stdout
    ckpt = json.loads((out / "report.json").read_text())["checkpoint"]["path"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(
            [
                ckpt,
                "--formats",
                "onnx",
                "--out",
                str(out),
                "--force",
                "--held-out",
                str(tiny_actions),
            ]
        )
    assert code == 2 and "which this model was trained on" in err.getvalue()
    assert json.loads((out / "report.json").read_text())["held_out"] == h  # left as it was


def test_more_data_folders_count_as_training_data(unseen: Path, tiny_actions: Path, tmp_path):
    from export.heldout import check_unseen

    copy = shutil.copytree(tiny_actions, tmp_path / "copy")
    config = {"data": str(unseen.parent / "elsewhere"), "more_data": [f"{tiny_actions}:1"]}
    with pytest.raises(BadArguments, match=f"24 videos of {copy} are videos of {tiny_actions}"):
        check_unseen(copy, config)
    check_unseen(unseen, config)  # nothing shared: no error


def test_by_needs_one_label_per_video(monkeypatch, tmp_path):
    """Streams labelled per frame have no top-1 per video to group: refused before any model
    file runs (the backend and the videos are faked: only the check is under test)."""
    spec = SimpleNamespace(classes=tuple("abc"))
    monkeypatch.setattr(heldout, "load_backend", lambda path: SimpleNamespace(spec=spec))
    unseen = Unseen(_frames(4, 2), False, {}, (), spec.classes)
    monkeypatch.setattr(heldout, "every_video", lambda *a: unseen)
    monkeypatch.setattr(heldout.measure, "backend_logits", lambda *a: pytest.fail("ran a model"))
    with pytest.raises(
        BadArguments, match="--by counts top-1 per video, but the labels of .* are "
    ):
        heldout.measure_files({"onnx": tmp_path / "m.onnx"}, {}, tmp_path, ("figure",))
