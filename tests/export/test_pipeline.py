"""What ``python -m export`` writes, read back by the device runtime: every format loads with the
right spec, gives the trained model's answers, and carries its metadata."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import pytest
import torch

import edge_hf
from edge_hf import synth
from edge_hf.backends import load_backend
from edge_hf.sampler import resize_into
from edge_hf.spec import METADATA_KEY, RT_INFO_PATH, HyperframeSpec
from export.__main__ import summary
from export.ranges import CANDIDATES, best
from models.checkpoint import load_checkpoint
from tests.export.conftest import SIZE

FILES = {"onnx": "model.onnx", "openvino": "model.xml", "openvino-int8": "model-int8.xml"}


def expected_spec(tiny_ckpt: Path) -> HyperframeSpec:
    spec = load_checkpoint(tiny_ckpt).spec
    assert spec.thresholds == {"fall": 0.8}  # the trainer's default; the export set 0.9
    return HyperframeSpec.from_dict({**spec.to_dict(), "alert_classes": {"fall": 0.9}})


def clip_hyperframes(name: str = "fall", seed: int = 11) -> np.ndarray:
    """Every T=3, stride-1 window of a synthetic clip, resized as the runtime resizes."""
    scene = synth.make_scene(name, seed=seed, size=(72, 96))
    frame = np.zeros((72, 96, 3), np.uint8)
    small = np.zeros((scene.length, SIZE, SIZE, 3), np.uint8)
    for i in range(scene.length):
        scene.render(i, frame)
        resize_into(frame, small[i])
    return np.stack([small[i : i + 3] for i in range(scene.length - 2)])


def backend_logits(path: Path, x: np.ndarray) -> np.ndarray:
    b = load_backend(path)
    buf, out = np.zeros((1, *x.shape[1:]), np.uint8), np.zeros((1, len(b.spec.classes)), np.float32)
    b.bind([buf], out)
    logits = []
    for hf in x:
        buf[0] = hf
        b.infer()
        logits.append(out[0].copy())
    return np.array(logits)


def test_the_folder_holds_the_models_the_report_and_the_card_only(exported: Path):
    assert sorted(p.name for p in exported.iterdir()) == [
        "MODEL_CARD.md",
        "model-int8.bin",
        "model-int8.xml",
        "model.bin",
        "model.onnx",
        "model.xml",
        "report.json",
    ]
    assert [p.name for p in exported.parent.iterdir()] == ["tiny"]  # no staging left behind


@pytest.mark.parametrize("fmt", list(FILES))
def test_every_format_loads_in_the_runtime_with_the_exported_spec(exported, tiny_ckpt, fmt):
    backend = load_backend(exported / FILES[fmt])
    assert backend.spec == expected_spec(tiny_ckpt)
    assert backend.name == ("onnxruntime" if fmt == "onnx" else "openvino")


@pytest.mark.parametrize("fmt", list(FILES))
def test_every_format_gives_the_trained_models_top1_on_a_fixed_clip(exported, tiny_ckpt, fmt):
    x = clip_hyperframes()
    with torch.inference_mode():
        want = load_checkpoint(tiny_ckpt).net(torch.from_numpy(x)).numpy()
    got = backend_logits(exported / FILES[fmt], x)
    clip = want.mean(0)
    if fmt == "openvino-int8":  # the clip's class, or one the trained model scores within 5 %
        # of its logits' range of it (the tiny model has near ties that INT8 may swap)
        assert clip[got.mean(0).argmax()] >= clip.max() - 0.05 * (clip.max() - clip.min())
    else:  # float formats: the same class for the clip and for every hyperframe
        assert got.mean(0).argmax() == clip.argmax()
        assert (got.argmax(1) == want.argmax(1)).all()
        spread = want.max() - want.min()
        assert np.abs(got - want).max() <= 1e-4 * spread


def test_parity_thresholds_hold_in_the_report(report: dict):
    for fmt in ("onnx", "openvino"):
        p = report["formats"][fmt]["parity"]
        assert p["relative"] <= 1e-4 and p["tolerance"] == 1e-4 and p["argmax_agree"] == 1.0
        assert report["formats"][fmt]["agree_with_torch"] == 1.0
    assert "parity" not in report["formats"]["openvino-int8"]  # INT8 is judged by its accuracy


def test_the_onnx_file_keeps_the_contract(exported: Path, tiny_ckpt: Path):
    m = onnx.load(exported / "model.onnx")
    onnx.checker.check_model(m, full_check=True)
    assert max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) >= 17
    meta = {p.key: p.value for p in m.metadata_props}
    assert HyperframeSpec.from_json(meta[METADATA_KEY]) == expected_spec(tiny_ckpt)
    (inp,) = m.graph.input
    t = inp.type.tensor_type
    assert t.elem_type == onnx.TensorProto.UINT8
    dims = [d.dim_param or d.dim_value for d in t.shape.dim]
    assert isinstance(dims[0], str) and dims[1:] == [3, SIZE, SIZE, 3]  # dynamic N


@pytest.mark.parametrize("fmt", ["openvino", "openvino-int8"])
def test_the_openvino_files_keep_the_spec_in_rt_info(exported: Path, tiny_ckpt: Path, fmt):
    model = ov.Core().read_model(exported / FILES[fmt])
    text = model.get_rt_info(list(RT_INFO_PATH)).astype(str)
    assert HyperframeSpec.from_json(text) == expected_spec(tiny_ckpt)
    fq = sum(op.get_type_name() == "FakeQuantize" for op in model.get_ordered_ops())
    assert (fq > 10) == (fmt == "openvino-int8")
    assert model.inputs[0].get_partial_shape()[0].is_dynamic


def test_batches_of_any_size_run(exported: Path):
    x = clip_hyperframes()[:5]
    for fmt in FILES:
        b = load_backend(exported / FILES[fmt])
        out = np.zeros((5, 6), np.float32)
        b.bind([np.ascontiguousarray(x)], out)
        b.infer()
        np.testing.assert_allclose(out, backend_logits(exported / FILES[fmt], x), atol=1e-4)


def test_report_and_card_hold_the_measurements(exported: Path, report: dict):
    rows = report["formats"]
    assert list(rows) == ["torch", "onnx", "openvino", "openvino-int8"]
    assert report["export"]["wait"] is None  # no lying class: nothing waits, nothing chosen
    for name, row in rows.items():
        assert 0 <= row["top1"] <= 1 and 0 <= row["macro_f1"] <= 1
        assert row["latency_ms"]["batch1"] > 0 and row["latency_ms"]["batch8"] > 0
        assert (row["bytes"] > 0) == (name != "torch")
    # the default keeps squeeze-excite and head (most of MobileNetV3-small's weights) in float
    assert rows["openvino-int8"]["bytes"] < rows["openvino"]["bytes"]
    drop = rows["openvino-int8"]["drop"]["top1"]
    assert drop == pytest.approx(rows["openvino"]["top1"] - rows["openvino-int8"]["top1"])
    for engine in ("onnxruntime", "openvino"):
        a = report["adapter"][engine]
        assert a["adapter_ms"] == pytest.approx(a["model_ms"] - a["backbone_ms"])
    assert report["data"]["test_videos"] == 12 and report["data"]["train_videos"] == 9
    q = dict(report["export"]["quantization"])
    choice = q.pop("range_choice")  # every candidate judged, the best kept
    floats = q.pop("in_float")  # the default's float groups, by their module names, and cost
    assert floats["of"] == 54 and floats["by_accuracy_control"] == []
    assert len(floats["layers"]) == 20 and floats["layers"][-2:] == ["conv_head", "classifier"]
    for batch in ("batch1", "batch8"):
        assert set(floats["latency_ms"][batch]) == {"shipped", "all_int8"}
        assert floats["latency_ms"][batch]["shipped"] == rows["openvino-int8"]["latency_ms"][batch]
    assert set(choice["candidates"]) == set(CANDIDATES) and choice["on"].startswith("validation")
    assert choice["chosen"] == best(choice["candidates"])
    assert q == {
        "preset": "mixed",
        "subset_size": report["data"]["calib_windows"],
        "fast_bias_correction": False,
        "activation_ranges": choice["chosen"],
        "max_drop": None,
        "keep_float": ["se", "head"],
        "overflow_fix": "enable",
    }
    card = (exported / "MODEL_CARD.md").read_text()
    assert report["command"].startswith("python -m export ") and report["command"] in card
    version = report["environment"]["packages"]["edge-hf"]  # the runtime it was exported with
    assert version == edge_hf.__version__ and f"edge-hf {version}," in card
    for label in ("PyTorch (trained)", "ONNX FP32", "OpenVINO FP32", "OpenVINO INT8"):
        assert label in card
    assert "fall ≥ 0.9" in card and json.dumps(report)  # serialisable
    assert f"activation ranges {choice['chosen']} (chosen by alert agreement with FP32" in card
    assert "In float: 20 of 54 layers (blocks.0.0.se.conv_reduce, " in card
    assert "with every layer in INT8" in card and "accuracy control added" not in card
    agreement = rows["openvino-int8"]["alert_agreement"]  # on the test split, not the choice's
    assert 0 <= agreement <= 1 and f"its alerts agree with FP32's at {agreement:.2f}" in card


def test_fp16_weights_halve_the_ir_within_their_own_tolerance(tiny_ckpt: Path, tmp_path: Path):
    """Into a folder with a comma in its name too: ovc reads "a,b" as two models, and the
    OpenVINO conversion failed there with a traceback (one export for both: each costs 20 s)."""
    from export.__main__ import main

    out = tmp_path / "cam 1,2"
    args = [str(tiny_ckpt), "--formats", "openvino", "--fp16", "--out", str(out), "--repeats", "3"]
    assert main(args) == 0
    report = json.loads((out / "report.json").read_text())
    row = report["formats"]["openvino"]
    assert row["precision"] == "fp16 weights" and row["parity"]["tolerance"] == 1e-2
    assert row["parity"]["argmax_agree"] == 1.0  # checked in export
    assert row["bytes"] < report["formats"]["onnx"]["bytes"] * 0.6
    assert sorted(p.name for p in out.iterdir()) == [
        "MODEL_CARD.md",
        "model.bin",
        "model.xml",
        "report.json",
    ]
    assert "OpenVINO, FP16 weights" in (out / "MODEL_CARD.md").read_text()
    backend = load_backend(out / "model.xml")  # its weights did not stay in the deleted copy
    assert backend.spec == load_checkpoint(tiny_ckpt).spec
    x = np.full(backend.spec.input_shape(), 128, np.uint8)
    logits = np.zeros((1, len(backend.spec.classes)), np.float32)
    backend.bind([x], logits)
    backend.infer()
    assert np.isfinite(logits).all() and logits.any()


ADVICE_TAIL = (
    ", or export again with --max-drop 0.01 (or --keep-float stem,se,head) and check that the falls are "
    "still caught (python -m models.evaluate MODEL STREAMS, python -m export.demo_check MODEL)."
)


@pytest.mark.parametrize(("top1", "window", "advised"), [(0.0, 0.01, False), (0.0, 0.03, True)])
def test_an_int8_loss_over_a_point_says_what_to_deploy(report: dict, top1, window, advised):
    import copy

    from export.card import metrics_table

    r = copy.deepcopy(report)
    r["formats"]["openvino-int8"]["drop"].update(top1=top1, window_top1=window)
    advice = [line for line in metrics_table(r) if line.startswith("More than 1 point lost")]
    assert advice == (
        ["More than 1 point lost: deploy model.xml (FP32) instead" + ADVICE_TAIL] if advised else []
    )
    # the FP32 file it names is one the export wrote (the demo ships ONNX and INT8 only)
    r["export"]["shipped"] = ["onnx", "openvino-int8"]
    assert any("deploy model.onnx (FP32) instead" in x for x in metrics_table(r)) == advised
    r["export"]["shipped"] = ["openvino-int8"]
    assert (
        any(
            "deploy an FP32 file (export again with --formats openvino)" in x
            for x in metrics_table(r)
        )
        == advised
    )


@pytest.mark.parametrize(("held_drop", "advised"), [(0.6, False), (1.4, True)])
def test_a_test_split_loss_is_judged_on_held_out_videos_when_measured(
    report: dict, held_drop, advised
):
    import copy

    from export.card import metrics_table

    r = copy.deepcopy(report)
    r["formats"]["openvino-int8"]["drop"].update(top1=0.016, window_top1=0.014)
    r["held_out"] = {
        "videos": 560,
        "int8": {"video": {"drop": 0.2}, "window": {"drop": held_drop}},
    }
    said = [line for line in metrics_table(r) if line.startswith("More than 1 point lost")]
    n = r["data"]["test_videos"]
    assert said == (
        ["More than 1 point lost: deploy model.xml (FP32) instead" + ADVICE_TAIL]
        if advised
        else [
            f"More than 1 point lost on the {n} test videos, but -0.2 per video, -0.6 per window "
            "on the 560 videos it never saw (On videos it never saw, with 95 % intervals), "
            "which tell the drop more closely."
        ]
    )


def test_a_single_frame_model_exports_and_its_adapter_is_measured(tiny_actions: Path, tmp_path):
    """With T=1 the exporter drops the adapter's last reshape and the backbone reads the batch
    size from the uint8 input: cutting the backbone out of that graph crashed the export."""
    from export.__main__ import main
    from models.config import parse
    from models.train import train

    argv = ["--recipe", "realtime-cpu", "--data", str(tiny_actions), "--size", str(SIZE)]
    argv += ["--frames", "1", "--epochs", "1", "--batch", "8", "--name", "t1", "--soup", "1"]
    train(parse([*argv, "--out", str(tmp_path / "runs"), "--cache", str(tmp_path / "cache")]))
    out = tmp_path / "export"
    ckpt = tmp_path / "runs" / "t1" / "best.pt"
    assert main([str(ckpt), "--formats", "onnx", "--out", str(out), "--repeats", "3"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["adapter"]["onnxruntime"]["backbone_ms"] > 0
    backend = load_backend(out / "model.onnx")
    assert backend.spec.frames == 1
    x = np.full(backend.spec.input_shape(), 128, np.uint8)
    logits = np.zeros((1, len(backend.spec.classes)), np.float32)
    backend.bind([x], logits)
    backend.infer()
    assert np.isfinite(logits).all() and logits.any()


def test_the_report_and_card_say_what_the_alert_does_on_the_validation_clips(exported, report):
    from models import data as datasets

    c = report["checkpoint"]["config"]
    ds = datasets.load(Path(c["data"]), c["seed"], c["val_fraction"], c["test_fraction"])
    whole = [ds.classes[v.labels] for v in ds.val if isinstance(v.labels, int)]
    r = report["clips"]
    assert r["format"] == "openvino-int8" and list(r["classes"]) == ["fall"]
    fall = r["classes"]["fall"]
    assert fall["threshold"] == 0.9 and fall["k_of_n"] == [2, 3]
    assert {k: v["of"] for k, v in fall["clips"].items()} == {k: whole.count(k) for k in whole}
    assert fall["backwards"]["of"] == whole.count("fall") > 0
    assert all(0 <= v["alert"] <= v["of"] for v in [*fall["clips"].values(), fall["backwards"]])
    said = f"On the validation clips at fall ≥ 0.9 (2 of 3), {fall['clips']['fall']['alert']}"
    assert said in (exported / "MODEL_CARD.md").read_text()
    assert said in summary(report, exported)  # what the export prints
