from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

from export.formats import BY_NAME, check_options, needed, parse_formats
from export.measure import check_parity
from models.errors import BadArguments, ParityFailed


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("onnx", nullcontext(["onnx"])),
        (" OpenVINO-int8 , onnx,onnx", nullcontext(["onnx", "openvino-int8"])),  # table order
        ("onnx,openvino,openvino-int8", nullcontext(["onnx", "openvino", "openvino-int8"])),
        ("", pytest.raises(BadArguments, match="expected a comma-separated list")),
        ("onx", pytest.raises(BadArguments, match="unknown format 'onx'; did you mean 'onnx'")),
        ("int8", pytest.raises(BadArguments, match="did you mean 'openvino-int8'")),
        ("tflite", pytest.raises(BadArguments, match=r"unknown format 'tflite' \(known: onnx,")),
    ],
)
def test_parse_formats(text, expect):
    with expect as names:
        assert [f.name for f in parse_formats(text)] == names


def test_int8_is_built_from_openvino_which_is_built_from_onnx():
    assert [f.name for f in needed((BY_NAME["openvino-int8"],))] == [
        "onnx",
        "openvino",
        "openvino-int8",
    ]
    assert BY_NAME["openvino-int8"].files() == ("model-int8.xml", "model-int8.bin")


@pytest.mark.parametrize(
    ("formats", "flag", "expect"),
    [
        ("openvino", "--fp16", nullcontext()),
        ("onnx,openvino-int8", "--fp16", pytest.raises(BadArguments, match="add openvino to")),
        ("openvino-int8", "--max-drop", nullcontext()),
        (
            "openvino",
            "--keep-float",
            pytest.raises(BadArguments, match="--keep-float applies to the openvino-int8"),
        ),
    ],
)
def test_options_must_belong_to_a_chosen_format(formats, flag, expect):
    with expect:
        check_options(parse_formats(formats), {flag: True})


def test_parity_accepts_float_noise_and_refuses_more():
    rng = np.random.default_rng(0)
    ref = rng.normal(0, 5, (64, 6)).astype(np.float32)
    ok = check_parity(ref, ref + 1e-6, "x", 1e-4)
    assert ok["argmax_agree"] == 1.0 and ok["relative"] < 1e-6
    with pytest.raises(ParityFailed, match=r"parity failed for openvino \(OpenVINO FP32\): max"):
        check_parity(ref, ref + 0.1, "openvino (OpenVINO FP32)", 1e-4)
    flipped = ref.copy()
    flipped[3] = ref[3][::-1]  # another class on one hyperframe
    with pytest.raises(ParityFailed, match="1 of 64 validation hyperframes change class"):
        check_parity(ref, flipped, "x", 1e-4)


def test_a_near_tie_may_go_either_way():
    ref = np.random.default_rng(1).normal(0, 5, (64, 6)).astype(np.float32)
    ref[5, :2] = ref[5].max() + 10, ref[5].max() + 10 - 1e-6  # top two within float noise
    got = ref.copy()
    got[5, :2] = ref[5, 1], ref[5, 0]
    r = check_parity(ref, got, "x", 1e-4)
    assert r["near_ties"] == 1 and r["argmax_agree"] == 63 / 64
