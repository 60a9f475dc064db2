"""export/floatops.py: which layers an INT8 model left in float, named as the network names them.

Real NNCF quantizations of the shipped demo's MobileNetV3-small (its float ONNX file), with an
ignored scope standing in for what --keep-float and accuracy control leave in float."""

from __future__ import annotations

import nncf
import numpy as np
import openvino as ov
import pytest
import timm
import torch

from edge_hf.runtime import DEMO_MODEL
from export import floatops
from export.quantize import float_layers
from tests.conftest import run_module


@pytest.fixture(scope="module")
def mobilenet() -> ov.Model:
    return ov.Core().read_model(str(DEMO_MODEL.with_name("model.onnx")))


@pytest.fixture(scope="module")
def net() -> torch.nn.Module:
    """The demo's network (9 input channels: 3 frames, 8 classes), with untrained weights: the
    names depend on its modules, not their values."""
    return timm.create_model("mobilenetv3_small_100", in_chans=9, num_classes=8)


def _quantized(model: ov.Model, floats: list[str]) -> ov.Model:
    x = np.random.default_rng(0).integers(0, 255, (8, 3, 160, 160, 3), dtype=np.uint8)
    calib = nncf.Dataset([x[i : i + 1] for i in range(len(x))])
    return nncf.quantize(
        model.clone(),
        calib,
        subset_size=len(x),
        fast_bias_correction=True,
        ignored_scope=nncf.IgnoredScope(names=floats) if floats else None,
    )


def test_the_float_model_is_all_float_and_a_plain_int8_has_none(mobilenet: ov.Model):
    assert len(floatops.layers(mobilenet)) == 54  # 52 convolutions, conv_head's, the classifier
    names = [op.get_friendly_name() for op in floatops.layers(mobilenet)]
    assert floatops.in_float(mobilenet) == names
    assert floatops.in_float(_quantized(mobilenet, [])) == []


def test_kept_layers_are_named_and_the_extra_one_is_put_on_accuracy_control(
    mobilenet: ov.Model, net: torch.nn.Module, tmp_path
):
    groups = float_layers(mobilenet, ("se", "head"))
    body = floatops.layers(mobilenet)[5].get_friendly_name()  # as accuracy control would revert
    q = _quantized(mobilenet, [*groups, body])
    ov.save_model(q, tmp_path / "q.xml")  # as shipped: weights compressed to int8 constants
    for model in (q, ov.Core().read_model(tmp_path / "q.xml")):
        assert set(floatops.in_float(model)) == {*groups, body}
        s = floatops.summary(model, net, groups)
        assert s["of"] == 54 and len(s["layers"]) == 21
        assert s["by_accuracy_control"] == ["blocks.1.0.conv_pw"]  # the sixth layer's module
        assert s["layers"][-2:] == ["conv_head", "classifier"]
        se = [n for n in s["layers"] if ".se.conv_" in n]
        assert len(se) == 18 and set(s["layers"]) - set(se) == {
            "blocks.1.0.conv_pw",
            "conv_head",
            "classifier",
        }


def test_names_stay_openvino_s_when_the_network_does_not_line_up(mobilenet: ov.Model):
    other = timm.create_model("mobilenetv3_large_100", in_chans=9, num_classes=8)
    assert floatops.torch_names(mobilenet, other) == {}
    s = floatops.summary(mobilenet, other, [])
    assert s["layers"] == floatops.in_float(mobilenet) and s["layers"][0].startswith("node_")


def test_the_command_names_the_shipped_int8_s_float_layers(net: torch.nn.Module):
    r = run_module("export.floatops", str(DEMO_MODEL))
    assert r.returncode == 0, r.stderr
    head, *named = r.stdout.splitlines()
    assert head == f"{DEMO_MODEL}: {len(named)} of 54 layers in float"
    modules = {name for name, _ in net.named_modules()}
    names = [n.strip() for n in named]
    assert set(names) <= modules  # by the report's architecture: module names, not OpenVINO's
    # the export's default groups at least (squeeze-excite and head), and whatever else it kept
    assert {n for n in modules if ".se.conv_" in n} | {"conv_head", "classifier"} <= set(names)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gone.xml", "gone.xml: no such file"),
        ("model.onnx", "expected an OpenVINO IR (.xml), found '.onnx'"),
        ("lonely.xml", "its weights file"),
    ],
)
def test_a_file_that_is_not_an_int8_ir_is_one_line_and_exit_3(tmp_path, name, message):
    (tmp_path / "model.onnx").write_bytes(DEMO_MODEL.with_name("model.onnx").read_bytes())
    (tmp_path / "lonely.xml").write_text("<net></net>\n")
    r = run_module("export.floatops", str(tmp_path / name))
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and message in r.stderr and "Traceback" not in r.stderr
