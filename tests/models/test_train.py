"""The training command end to end on tiny data (64 px, a few clips), as a real subprocess."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from edge_hf.spec import HyperframeSpec, Scale
from models.config import parse
from models.factory import build
from models.train import network
from tests.conftest import run_module

TINY = [
    "--recipe",
    "realtime-cpu",
    "--size",
    "64",
    "--epochs",
    "1",
    "--batch",
    "8",
    "--samples-per-clip",
    "2",
    "--soup",  # one run, not the recipe's three members (tests/models/test_soup.py)
    "1",
]


def train(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    out = ["--out", str(tmp / "runs"), "--cache", str(tmp / "cache")]
    return run_module("models.train", *TINY, *out, *args, timeout=300)


@pytest.fixture(scope="module")
def one_epoch(tiny_actions: Path, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("train")
    r = train("--data", str(tiny_actions), "--name", "tiny", tmp=tmp)
    assert r.returncode == 0, r.stderr
    (tmp / "stderr.txt").write_text(r.stderr)
    return tmp


def test_one_epoch_writes_checkpoint_metrics_and_plots(one_epoch: Path):
    run = one_epoch / "runs" / "tiny"
    assert {p.name for p in run.iterdir()} >= {
        "best.pt",
        "last.pt",
        "metrics.json",
        "curves.png",
        "confusion.png",
    }
    m = json.loads((run / "metrics.json").read_text())
    row = m["history"][0]
    assert set(row) >= {"top1", "macro_f1", "per_class", "confusion", "loss", "samples_per_s"}
    # validation: 3 videos carved from the 12 of the training list; test: the 12 of the test list
    assert len(row["confusion"]) == 6 and sum(map(sum, row["confusion"])) == 3
    assert sum(map(sum, m["test"]["confusion"])) == 12 and m["test_top1"] == m["test"]["top1"]
    assert m["videos"] == {"train": 9, "val": 3, "test": 12}
    assert m["stopped"] == {
        "reason": "epochs: all 1 run",
        "epochs_run": 1,
        "best_epoch": 1,
        "chosen_on": "val top-1 and alert AUC",
    }
    # the tiny clips are written at 25 fps: the spec says what motion speed the model learnt
    assert (
        HyperframeSpec.from_json(torch.load(run / "best.pt", weights_only=True)["spec"]).fps == 25
    )
    best, last = (torch.load(run / f, weights_only=True)["model"] for f in ("best.pt", "last.pt"))
    assert all(torch.equal(best[k], last[k]) for k in best)  # one epoch: it is the kept one
    # its fall clips are labelled whole: the epoch's score is the mean with their AUC
    assert 0 <= row["alert_auc"] <= 1 and row["choice"] == (row["top1"] + row["alert_auc"]) / 2
    assert m["flip"]["swap"] == {"walk_left": "walk_right", "walk_right": "walk_left"}
    assert set(row["per_class"]["fall"]) == {"precision", "recall"}


def test_checkpoint_round_trip(one_epoch: Path, tiny_actions: Path):
    ckpt = torch.load(
        one_epoch / "runs" / "tiny" / "best.pt", map_location="cpu", weights_only=True
    )
    spec = HyperframeSpec.from_json(ckpt["spec"])
    assert spec.frames == 3 and spec.size == (64, 64) and spec.thresholds == {"fall": 0.8}
    cfg = json.loads(ckpt["config"])
    net = build(cfg["arch"], spec.frames, len(spec.classes)).eval()
    net.load_state_dict(ckpt["model"])
    x = torch.randint(0, 256, (2, 3, 64, 64, 3), dtype=torch.uint8)
    again = build(cfg["arch"], spec.frames, len(spec.classes)).eval()
    again.load_state_dict(
        torch.load(one_epoch / "runs" / "tiny" / "best.pt", weights_only=True)["model"]
    )
    with torch.no_grad():
        torch.testing.assert_close(net(x), again(x))


def test_a_fine_tune_reports_its_starting_weights_on_the_same_splits(
    one_epoch: Path, tiny_actions: Path, tmp_path: Path
):
    """Started from a checkpoint with the same classes (its head kept), a run scores those weights
    before its first epoch: the first run's own validation and test numbers, to the digit."""
    first = json.loads((one_epoch / "runs" / "tiny" / "metrics.json").read_text())
    assert first["start"] is None  # from the posture weights: other classes, no start to score
    best = one_epoch / "runs" / "tiny" / "best.pt"
    r = train("--data", str(tiny_actions), "--pretrained", str(best), "--name", "ft", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "runs" / "ft" / "metrics.json").read_text())
    assert m["start"]["val"]["top1"] == first["best_top1"]
    assert m["start"]["test"]["top1"] == first["test_top1"]
    assert f"(starting weights {first['test_top1']:.3f})" in r.stdout


def test_the_trainer_lays_conv_weights_out_channels_last_and_computes_the_same():
    """Only the memory layout differs: the same weights in a default-layout network (what
    export builds) give the same logits."""
    cfg = parse(["--data", "x", "--recipe", "realtime-cpu", "--size", "64"])
    run = SimpleNamespace(
        ds=SimpleNamespace(classes=("a", "b", "c")), spec=SimpleNamespace(inputs=(cfg.hw,))
    )
    net = network(cfg, run, None).eval()
    w = net.stem().weight
    assert w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous()
    plain = build(cfg.arch, cfg.frames, 3, input_mode=cfg.input_mode).eval()
    plain.load_state_dict(net.state_dict())
    assert plain.stem().weight.is_contiguous()
    x = torch.randint(0, 256, (2, 3, 64, 64, 3), dtype=torch.uint8)
    with torch.no_grad():
        torch.testing.assert_close(net(x), plain(x), rtol=1e-4, atol=1e-4)


def test_second_run_decodes_nothing(one_epoch: Path, tiny_actions: Path):
    from models.cache import FrameCache

    cache = FrameCache(one_epoch / "cache", (64, 64))
    for clip in sorted(tiny_actions.rglob("*.avi")):
        assert cache.frames(clip) is not None
    assert cache.decoded == 0


def test_resume_with_another_class_list_is_refused(one_epoch: Path, tiny_streams: Path):
    r = train(
        "--data",
        str(tiny_streams),
        "--name",
        "tiny",
        "--resume",
        "--label-strategy",
        "center",
        "--val-fraction",
        "0.5",
        "--test-fraction",
        "0",
        tmp=one_epoch,
    )
    assert r.returncode == 2
    assert (
        "cannot resume: it was trained on classes ['walk_left'" in r.stderr
        and "use a new --name" in r.stderr
    )


def test_streams_with_center_labels_train(tiny_streams: Path, tmp_path: Path):
    r = train(
        "--data",
        str(tiny_streams),
        "--label-strategy",
        "window-any",
        "--val-fraction",
        "0.5",
        "--test-fraction",
        "0",
        tmp=tmp_path,
    )
    assert r.returncode == 0, r.stderr


def test_unreadable_and_short_clips_are_skipped_with_one_warning(
    tiny_actions: Path, tmp_path: Path
):
    data = tmp_path / "data"
    shutil.copytree(tiny_actions, data)
    (data / "fall" / "v_fall_g02_c01.avi").write_bytes(b"broken")
    r = train("--data", str(data), "--frames", "3", "--stride", "39", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "skipped 1 unreadable video(s): v_fall_g02_c01.avi" in r.stderr
    assert re.search(
        r"shorter than the hyperframe window of 79 frames: v_\w+\.avi \(77 frames\)", r.stderr
    )


def test_more_data_with_labels_the_dataset_lacks_is_refused(
    tiny_actions: Path, tiny_streams: Path, tmp_path: Path
):
    """The demo story's labels (walk, stand, ...) are not the action classes: one line, exit 2."""
    assert parse(["--data", "x", "--more-data", "a", "b"]).more_data == ("a", "b")
    r = train("--data", str(tiny_actions), "--more-data", str(tiny_streams), tmp=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "segments.csv:2: unknown label 'walk'; the dataset" in r.stderr


def test_nothing_usable_is_an_error(tiny_actions: Path, tmp_path: Path):
    r = train("--data", str(tiny_actions), "--stride", "100", tmp=tmp_path)
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith("models.train: error: no usable videos among 9")
    )


def test_another_backbone_is_told_how_to_start_from_scratch(tiny_actions: Path, tmp_path: Path):
    """The recipe's starting weights are MobileNetV3-small's: another --arch is one line naming
    the file and the fix, no traceback, no run folder."""
    r = train("--data", str(tiny_actions), "--arch", "resnet18", "--name", "r18", tmp=tmp_path)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "falls-t3.pt do not fit" in last and "--pretrained '' starts from scratch" in last
    assert not (tmp_path / "runs" / "r18" / "best.pt").exists()


def test_time_limit_stops_and_says_why(tiny_actions: Path, tmp_path: Path):
    r = train("--data", str(tiny_actions), "--epochs", "5", "--time-limit", "0.0001", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    m = json.loads(next((tmp_path / "runs").glob("*/metrics.json")).read_text())
    assert m["stopped"]["epochs_run"] == 1 and m["stopped"]["reason"].startswith("time limit")
    assert "stopped: time limit" in r.stdout


def test_the_pyramid_trains_and_its_baselines_with_it(tiny_pyramid):
    """The recipe's pyramid, tiny: it trains and is evaluated like the others, and --baseline
    trains its single scale and T=1 the same way, each reported on one line."""
    runs, stdout = tiny_pyramid
    lines = stdout.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["pyr", "pyr-single", "pyr-t1"]
    assert all("macro-F1" in ln for ln in lines)
    ckpt = torch.load(runs / "pyr" / "best.pt", weights_only=True)
    spec = HyperframeSpec.from_json(ckpt["spec"])
    assert spec.inputs == (Scale(3, 1), Scale(3, 4)) and spec.window == 9
    assert "head.weight" in ckpt["model"]
    single = HyperframeSpec.from_json(
        torch.load(runs / "pyr-single" / "best.pt", weights_only=True)["spec"]
    )
    assert single.inputs == (Scale(3, 1),)
    m = json.loads((runs / "pyr" / "metrics.json").read_text())
    assert m["config"]["scales"] == ["3x1", "3x4"] and m["test"]["macro_f1"] >= 0


def test_no_alert_class_is_said_with_the_fix(one_epoch: Path, tiny_actions: Path, tmp_path: Path):
    r = train("--data", str(tiny_actions), "--abnormal", "falling", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "no class is named falling (classes: " in r.stderr
    assert "the model will raise no alert; name its alert classes with --abnormal" in r.stderr
    assert "no class is named" not in (one_epoch / "stderr.txt").read_text()


def test_alert_clips_labelled_whole_are_left_out_and_said(one_epoch: Path):
    """realtime-cpu (the tiny run's recipe) leaves the still windows of fall clips labelled
    whole out, and says so (a run without --action-motion: tests/models/test_alerts.py)."""
    said = (one_epoch / "stderr.txt").read_text()
    assert re.search(r"tiny: \d+ fall training clips are labelled whole: their windows that ", said)
    assert "of the way from the clip's stillest to its busiest are left out" in said


def test_a_dataset_with_videos_of_one_class_is_refused_naming_the_empty_folders(
    tiny_actions: Path, tmp_path: Path
):
    """A folder per class whose other folders are empty (a copy gone wrong) would train a
    "perfect" model of one class: one line naming the empty folders, exit 2, no run folder."""
    data = tmp_path / "one"
    for c in ("fall", "walk_left", "wave"):
        (data / c).mkdir(parents=True)
    for clip in sorted((tiny_actions / "wave").iterdir())[:4]:
        (data / "wave" / clip.name).symlink_to(clip)
    r = train("--data", str(data), "--name", "one", tmp=tmp_path)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert last.endswith(
        "expected videos of at least 2 classes, found 1 (wave); these folders "
        "hold no videos: fall, walk_left"
    )
    assert not (tmp_path / "runs" / "one").exists()
