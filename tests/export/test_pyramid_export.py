"""A temporal pyramid through ``python -m export``: one model with one input per scale, the spec
inside, ONNX and OpenVINO parity and INT8 as for single-input models (a tiny model, 64 px)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import pytest
import torch

from edge_hf.backends import load_backend
from edge_hf.sampler import input_buffers
from edge_hf.spec import RT_INFO_PATH, HyperframeSpec, Scale
from models.checkpoint import load_checkpoint
from models.dataset import offsets_of, split_inputs
from tests.export.conftest import SIZE, run_export
from tests.export.test_pipeline import FILES, clip_hyperframes


@pytest.fixture(scope="module")
def pyramid(tiny_pyramid, tmp_path_factory) -> tuple[Path, Path]:
    """The tiny pyramid the trainer's test trained (tests/conftest.py), exported by the CLI."""
    ckpt, out = tiny_pyramid[0] / "pyr" / "best.pt", tmp_path_factory.mktemp("pyramid") / "x"
    r = run_export(str(ckpt), "--out", str(out), "--repeats", "2", "--subset-size", "40")
    assert r.returncode == 0, r.stderr
    return ckpt, out


def windows(spec: HyperframeSpec) -> np.ndarray:
    """Every pyramid window of a synthetic clip, its scales' frames in turn (the trainer's)."""
    frames = clip_hyperframes()[:, 0]  # the clip's resized frames, one per window start
    offsets = offsets_of(spec.inputs)
    return np.stack([frames[s + offsets] for s in range(len(frames) - offsets.max())])


def test_one_input_per_scale_with_the_spec_inside(pyramid):
    ckpt, out = pyramid
    spec = load_checkpoint(ckpt).spec
    assert spec.inputs == (Scale(3, 1), Scale(3, 4))
    m = onnx.load(out / "model.onnx")
    assert [i.name for i in m.graph.input] == ["frames_0", "frames_1"]
    for i in m.graph.input:
        dims = [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
        assert isinstance(dims[0], str) and dims[1:] == [3, SIZE, SIZE, 3]
    for fmt in ("openvino", "openvino-int8"):
        model = ov.Core().read_model(out / FILES[fmt])
        assert len(model.inputs) == 2
        assert HyperframeSpec.from_json(model.get_rt_info(list(RT_INFO_PATH)).astype(str)) == spec


def test_parity_and_int8_as_for_a_single_input_model(pyramid):
    _, out = pyramid
    report = json.loads((out / "report.json").read_text())
    for fmt in ("onnx", "openvino"):
        p = report["formats"][fmt]["parity"]
        assert p["relative"] <= 1e-4 and p["argmax_agree"] == 1.0
    int8 = report["formats"]["openvino-int8"]
    assert "drop" in int8 and 0 <= int8["top1"] <= 1
    card = (out / "MODEL_CARD.md").read_text()
    assert report["adapter"] is None and "Not measured for a temporal pyramid" in card
    assert "input 1: 3 frames every 4, ending 0 before the newest" in card


@pytest.mark.parametrize("fmt", list(FILES))
def test_every_format_answers_as_the_trained_pyramid(pyramid, fmt):
    ckpt, out = pyramid
    net = load_checkpoint(ckpt).net
    b = load_backend(out / FILES[fmt])
    x = windows(b.spec)[:8]
    with torch.inference_mode():
        want = net(torch.from_numpy(x)).numpy()
    bufs, got = input_buffers(b.spec, len(x)), np.zeros((len(x), len(b.spec.classes)), np.float32)
    for buf, part in zip(bufs, split_inputs(x, b.spec.inputs), strict=True):
        buf[...] = part
    b.bind(bufs, got)
    b.infer()
    if fmt == "openvino-int8":
        assert got.mean(0).argmax() == want.mean(0).argmax()
    else:
        np.testing.assert_allclose(got, want, atol=1e-4 * (want.max() - want.min()))
