from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import onnx
import pytest

from edge_hf.backends import load_backend
from edge_hf.errors import ModelError, SpecError
from edge_hf.spec import (
    METADATA_KEY,
    HyperframeSpec,
    Scale,
    Then,
    layer_thresholds,
    parse_threshold,
    write_onnx_spec,
)
from tests.conftest import save_model, save_openvino

SPEC = HyperframeSpec(
    frames=5,
    stride=2,
    size=(96, 128),
    classes=("idle", "wave", "fall"),
    alert_classes=(("fall", 0.7), ("wave", 0.9)),
    interpolation="area",
    alert_then=(Then("fall", "idle", 0.6, 1.5),),
    fps=12.5,
    arch="mobilenetv3_small_100",
    provenance=(("data", "synth v1"),),
)


def test_json_round_trip_is_identity():
    again = HyperframeSpec.from_json(SPEC.to_json())
    assert again == SPEC
    assert json.loads(SPEC.to_json())["alert_classes"] == {"fall": 0.7, "wave": 0.9}
    assert json.loads(SPEC.to_json())["alert_then"] == {
        "fall": {"pose": "idle", "threshold": 0.6, "within": 1.5}
    }
    assert json.loads(SPEC.to_json())["fps"] == 12.5
    plain = replace(SPEC, alert_then=(), fps=0.0)  # none: no field, so older runtimes read it
    assert "alert_then" not in json.loads(plain.to_json())
    assert "fps" not in json.loads(plain.to_json())
    assert HyperframeSpec.from_json(plain.to_json()) == plain


def test_round_trip_through_onnx_file(tmp_path: Path):
    path = save_model(tmp_path / "m.onnx", SPEC)
    meta = {p.key: p.value for p in onnx.load(path).metadata_props}
    assert HyperframeSpec.from_json(meta[METADATA_KEY]) == SPEC
    assert load_backend(path, "onnxruntime").spec == SPEC
    assert load_backend(path, "openvino").spec == SPEC  # OpenVINO reading the ONNX file


def test_round_trip_through_openvino_ir(tmp_path: Path):
    xml = save_openvino(save_model(tmp_path / "m.onnx", SPEC), tmp_path / "m.xml")
    assert load_backend(xml).spec == SPEC


def test_write_onnx_spec_replaces_an_earlier_one():
    model = onnx.ModelProto()
    write_onnx_spec(model, SPEC)
    write_onnx_spec(model, HyperframeSpec(frames=1, stride=1, size=(8, 8), classes=("a",)))
    assert [p.key for p in model.metadata_props] == [METADATA_KEY]
    assert HyperframeSpec.from_json(model.metadata_props[0].value).frames == 1


def test_window_and_pyramid_lags():
    assert SPEC.window == 9
    pyramid = HyperframeSpec(
        frames=3, stride=1, size=(8, 8), classes=("a",), scales=(Scale(3, 1, 0), Scale(3, 4, 2))
    )
    assert [s.lags() for s in pyramid.inputs] == [(2, 1, 0), (10, 6, 2)]
    assert pyramid.window == 11


BASE = SPEC.to_dict()


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({}, nullcontext()),
        (
            {"frames": 0},
            pytest.raises(SpecError, match="frames must be a positive integer, found 0"),
        ),
        ({"stride": 1.5}, pytest.raises(SpecError, match="stride must be a positive integer")),
        ({"size": [96]}, pytest.raises(SpecError, match=r"size must be \[H, W\]")),
        ({"size": [96, -1]}, pytest.raises(SpecError, match=r"size\[1\] \(W\) must be a positive")),
        ({"classes": []}, pytest.raises(SpecError, match="classes must be a non-empty list")),
        (
            {"classes": ["a", "a"]},
            pytest.raises(SpecError, match=r"unique, found duplicates \['a'\]"),
        ),
        (
            {"alert_classes": {"smoke": 0.5}},
            pytest.raises(SpecError, match="'smoke', which is not one of classes"),
        ),
        (
            {"alert_classes": {"fall": 1.5}},
            pytest.raises(SpecError, match=r"threshold in \(0, 1\], found 1.5"),
        ),
        (
            {"interpolation": "bilinear"},
            pytest.raises(SpecError, match="interpolation must be one of"),
        ),
        ({"layout": "channels-first"}, pytest.raises(SpecError, match="layout must be one of")),
        (
            {"alert_then": {"fall": {"pose": "lying"}}},
            pytest.raises(SpecError, match="rules between classes"),
        ),
        (
            {"alert_then": {"fall": {"pose": "idle", "within": 0}}},
            pytest.raises(SpecError, match="0 to 60 seconds, found 0.2 and 0"),
        ),
        (
            {"alert_then": {"fall": "idle"}},
            pytest.raises(SpecError, match=r"alert_then\['fall'\] must be \{pose, threshold"),
        ),
        ({"scales": [{"frames": 3}]}, pytest.raises(SpecError, match="frames, stride, offset")),
        ({"version": 99}, pytest.raises(SpecError, match="newer than this edge-hf understands")),
        ({"fps": -25}, pytest.raises(SpecError, match=r"fps must be a frame rate 0 to 1000")),
        ({"fps": "25"}, pytest.raises(SpecError, match=r"\(0: not recorded\), found '25'")),
        ({"colour": "rgb"}, pytest.raises(SpecError, match=r"unknown field\(s\) \['colour'\]")),
    ],
)
def test_validation_names_the_field(change, expect):
    with expect:
        HyperframeSpec.from_dict({**BASE, **change}, "model.onnx")


def test_missing_field_and_bad_json():
    d = dict(BASE)
    del d["classes"]
    with pytest.raises(SpecError, match=r"missing field\(s\) \['classes'\]"):
        HyperframeSpec.from_dict(d)
    with pytest.raises(SpecError, match="m.onnx: spec is not valid JSON"):
        HyperframeSpec.from_json("{nope", "m.onnx")


def test_onnx_model_without_spec_is_refused_with_the_fix(tmp_path: Path):
    model = onnx.load(save_model(tmp_path / "m.onnx"))
    del model.metadata_props[:]
    onnx.save(model, tmp_path / "foreign.onnx")
    for backend in ("onnxruntime", "openvino"):
        with pytest.raises(ModelError, match=r"foreign.onnx has no edge-hf spec.*python -m export"):
            load_backend(tmp_path / "foreign.onnx", backend)


@pytest.mark.parametrize(
    ("scales", "expect"),
    [
        ([Scale(3, 1), Scale(3, 4, 2)], nullcontext()),
        (
            [Scale(3, 1), Scale(5, 2)],
            pytest.raises(SpecError, match=r"scales\[1\].frames: expected 3 .*found 5"),
        ),
        (
            [Scale(5, 1)],
            pytest.raises(SpecError, match=r"scales\[0\].frames: expected 3 .*found 5"),
        ),
        (
            [Scale(3, 2), Scale(3, 4)],
            pytest.raises(SpecError, match=r"scales\[0\].stride: expected 1 .*found 2"),
        ),
        ([Scale(3, 1), Scale(3, 1)], pytest.raises(SpecError, match="scales must differ")),
        (
            [Scale(3, 1, 1), Scale(3, 4, 2)],
            pytest.raises(SpecError, match=r"newest frame \(offset 0\)"),
        ),
    ],
)
def test_scales_are_checked_against_frames_and_stride(scales, expect):
    with expect:
        HyperframeSpec(frames=3, stride=1, size=(8, 8), classes=("a",), scales=tuple(scales))


def test_thresholds_are_parsed_and_layered_in_one_place():
    spec = HyperframeSpec(
        frames=1, stride=1, size=(8, 8), classes=("fall", "ok"), alert_classes=(("fall", 0.8),)
    )
    assert parse_threshold("fall=0.5") == ("fall", 0.5)
    for bad in ("fall", "fall=0", "fall=1.5", "=0.5", "fall=nan", "fall=x"):
        with pytest.raises(SpecError, match="expected CLASS=P with 0 < P <= 1"):
            parse_threshold(bad)
    layers = [("--threshold", (("fall", 0.6),)), ("cameras.a.thresholds", (("ok", 0.9),))]
    assert layer_thresholds(spec, layers) == {"fall": 0.6, "ok": 0.9}
    with pytest.raises(SpecError, match="cameras.a.thresholds smoke=0.5: the model has no class"):
        layer_thresholds(spec, [("cameras.a.thresholds", (("smoke", 0.5),))])
    with pytest.raises(SpecError, match=r"--threshold fall must be a threshold in \(0, 1\]"):
        layer_thresholds(spec, [("--threshold", (("fall", 2.0),))])


# ---- any spec a model file can carry: a spec that round-trips, or one line naming the field ----
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**12),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.sampled_from(["fall", "lying", "idle", "softmax", "sigmoid", "linear", "frame-major"]),
)
_KEYS = st.sampled_from(["pose", "threshold", "within", "frames", "stride", "offset", "fall", "x"])
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=10,
)
_FIELDS = st.sampled_from([*HyperframeSpec.__dataclass_fields__, "extra"])
_BASE = {
    "frames": 3,
    "stride": 1,
    "size": [160, 160],
    "classes": ["idle", "fall", "lying"],
    "alert_classes": {"fall": 0.8},
    "alert_then": {"fall": {"pose": "lying"}},
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(_FIELDS, _VALUE, max_size=4))
@example(changes={"provenance": {"pose": None, "frames": None}})  # read back in another order
def test_any_spec_in_a_model_file_is_valid_or_a_one_line_error(changes):
    """A foreign or damaged model's metadata: any JSON in any field is refused with one line
    naming the field, or makes a spec that gives input shapes and reads back the same."""
    text = json.dumps({**_BASE, **changes})
    try:
        spec = HyperframeSpec.from_json(text, "m.onnx")
    except SpecError as e:
        assert "\n" not in str(e) and str(e).startswith("m.onnx: "), str(e)
        return
    assert all(len(spec.input_shape(i, 1)) == 5 for i in range(len(spec.inputs)))
    assert HyperframeSpec.from_json(spec.to_json()) == spec
