"""export --tune DATASET: INT8 (the ranges, accuracy control) and the wait for lying chosen on
every video of a dataset the model never trained on, instead of the trainer's validation split.
The tiny checkpoint and a dataset drawn with another seed (tests/export/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.export.conftest import run_export

FAST = ["--subset-size", "50", "--repeats", "2", "--then", "none"]


def test_the_validation_set_becomes_every_video_of_the_tune_dataset(tiny_ckpt: Path, unseen: Path):
    from export.data import load_data, tuned_on
    from export.quantize import _validation_items
    from models.checkpoint import load_checkpoint

    ckpt = load_checkpoint(tiny_ckpt)
    data = load_data(Path(ckpt.config["data"]), ckpt.spec, ckpt.config, 50)
    tuned = tuned_on(data, unseen, ckpt.spec, ckpt.config)
    assert (tuned.calib, tuned.val) == (data.calib, data.val)  # calibration and test untouched
    assert len(np.unique(tuned.tune.clip)) == 12 and len(tuned.tune_videos) == 12
    items = _validation_items(tuned)
    assert len(items) == 12  # one per video: the report's top-1 is per video
    # each video labelled in the model's class order, by the folder it sits in
    folder = {v.path: tuned.classes[v.video_class] for v in tuned.tune_videos}
    assert sorted(ckpt.spec.classes[y] for _, y in items) == sorted(folder.values())
    assert tuned.tune_root == unseen and data.tune_root is None


def test_labels_per_frame_cannot_tune_a_model_scored_per_window(tiny_ckpt: Path, unseen: Path):
    from export.data import EvalData, Hyperframes, tuned_on
    from models.checkpoint import load_checkpoint
    from models.errors import BadData

    ckpt = load_checkpoint(tiny_ckpt)
    h = Hyperframes(np.zeros((4, 1), np.uint8), np.zeros(4, int), np.arange(4))
    per_frame = EvalData(None, h, h, h, False, (4, 4))
    with pytest.raises(BadData, match="expected labels per frame, .* found one label per video"):
        tuned_on(per_frame, unseen, ckpt.spec, ckpt.config)


def test_the_export_is_chosen_on_the_tune_dataset_and_says_so(tuned_export, unseen: Path):
    out, _ = tuned_export
    report = json.loads((out / "report.json").read_text())
    assert report["data"]["tune"] == {"dataset": str(unseen), "videos": 12}
    on = report["export"]["quantization"]["range_choice"]["on"]
    assert on == f"--tune {unseen}, {12 * report['checkpoint']['config']['eval_clips']} hyperframes"
    card = (out / "MODEL_CARD.md").read_text()
    assert f"chosen on `{unseen}` (--tune: 12 videos" in card


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("trained-on", "which this model was trained on; pass a dataset it never saw"),
        ("held-out-too", "12 videos of --held-out"),
    ],
)
def test_tune_data_the_model_saw_or_measures_on_is_refused(
    tiny_ckpt: Path, tiny_actions: Path, unseen: Path, tmp_path, case, words
):
    out = tmp_path / "exp"
    out.mkdir()
    (out / "kept.txt").write_text("an earlier export\n")
    args = [str(tiny_ckpt), "--formats", "onnx,openvino-int8", *FAST, "--out", str(out), "--force"]
    extra = ["--tune", str(tiny_actions)] if case == "trained-on" else ["--tune", str(unseen)]
    if case == "held-out-too":
        extra += ["--held-out", str(unseen)]
    r = run_export(*args, *extra)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert words in r.stderr
    assert [p.name for p in out.iterdir()] == ["kept.txt"]  # nothing written, nothing removed
