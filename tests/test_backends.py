from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from edge_hf.backends import load_backend
from edge_hf.backends.onnxruntime import resolve_providers
from edge_hf.errors import ModelError, UsageError
from edge_hf.spec import HyperframeSpec, write_onnx_spec
from tests.conftest import save_model, save_openvino
from tests.motion_model import MOTION_SPEC


def hyperframes(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(
        0, 256, (n, *MOTION_SPEC.input_shape()[1:]), np.uint8
    )


@pytest.fixture
def models(tmp_path: Path) -> dict[str, Path]:
    onnx_path = save_model(tmp_path / "m.onnx")
    return {"onnx": onnx_path, "xml": save_openvino(onnx_path, tmp_path / "m.xml")}


@pytest.mark.parametrize(
    ("fmt", "backend"),
    [("onnx", "onnxruntime"), ("onnx", "openvino"), ("xml", "openvino"), ("xml", "auto")],
)
def test_bound_inference_matches_a_plain_session_run(models, fmt, backend):
    reference = ort.InferenceSession(str(models["onnx"]), providers=["CPUExecutionProvider"])
    b = load_backend(models[fmt], backend)
    x = np.zeros(MOTION_SPEC.input_shape(), np.uint8)
    out = np.full((1, 2), np.nan, np.float32)
    b.bind([x], out)
    for k, frames in enumerate(hyperframes(4)):
        x[0] = frames  # the runtime writes into the bound buffer; no rebinding
        b.infer()
        want = reference.run(None, {"frames": x})[0]
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4, err_msg=f"hyperframe {k}")


def test_auto_picks_the_backend_by_suffix(models):
    assert load_backend(models["onnx"]).name == "onnxruntime"
    assert load_backend(models["xml"]).name == "openvino"


def test_describe_reports_io(models):
    d = load_backend(models["onnx"]).describe()
    assert d["inputs"] == {"frames": ["?", 3, 160, 160, 3]} and d["outputs"] == {"logits": ["?", 2]}
    assert "CPUExecutionProvider" in d["providers"]
    d = load_backend(models["xml"]).describe()
    assert d["inputs"] == {"frames": "[?,3,160,160,3]"} and d["device"] == "CPU"
    assert d["precision"] == "f32"


def test_the_threads_option_reaches_the_engine(models):
    from edge_hf.backends import BackendOptions

    ort_default = load_backend(models["onnx"]).session.get_session_options()
    assert ort_default.intra_op_num_threads == 1  # cores left for decoding video
    ort_two = load_backend(models["onnx"], "auto", BackendOptions(threads=2)).session
    assert ort_two.get_session_options().intra_op_num_threads == 2
    # OpenVINO caps the count at the cores it sees, so ask for fewer than its own choice
    ov_one = load_backend(models["xml"], "auto", BackendOptions(threads=1)).compiled
    assert ov_one.get_property("INFERENCE_NUM_THREADS") == 1


def _corrupt(tmp: Path) -> Path:
    p = tmp / "corrupt.onnx"
    p.write_bytes(b"\x08\x07garbage" * 50)
    return p


def _mislabelled(tmp: Path, name: str, **graph) -> Path:
    """A model whose graph is built for one spec but which carries MOTION_SPEC."""
    fields = {"frames": 3, "stride": 3, "size": (160, 160), "classes": ("normal", "fall"), **graph}
    path = save_model(tmp / name, HyperframeSpec(**fields))
    m = onnx.load(path)
    write_onnx_spec(m, MOTION_SPEC)
    onnx.save(m, path)
    return path


def _wrong_shape(tmp: Path) -> Path:
    return _mislabelled(tmp, "shape.onnx", frames=5)


def _wrong_classes(tmp: Path) -> Path:
    return _mislabelled(tmp, "cls.onnx", classes=("a", "b", "c"))


def _xml_without_bin(tmp: Path) -> Path:
    xml = save_openvino(save_model(tmp / "m.onnx"), tmp / "lonely.xml")
    xml.with_suffix(".bin").unlink()
    return xml


def _text_file(tmp: Path) -> Path:
    p = tmp / "notes.txt"
    p.write_text("hello")
    return p


@pytest.mark.parametrize(
    ("make", "backend", "expect"),
    [
        (
            lambda t: t / "missing.onnx",
            "auto",
            pytest.raises(ModelError, match=r"missing.onnx does not exist; check --model"),
        ),
        (
            _corrupt,
            "onnxruntime",
            pytest.raises(ModelError, match=r"corrupt.onnx: not a loadable ONNX model"),
        ),
        (
            _corrupt,
            "openvino",
            pytest.raises(ModelError, match=r"corrupt.onnx: not a loadable OpenVINO/ONNX model"),
        ),
        (
            _wrong_shape,
            "onnxruntime",
            pytest.raises(
                ModelError,
                match=r"input 'frames' has shape \[\?, 5, 160, 160, 3\] but its spec says \[N, 3, 160, 160, 3\]",
            ),
        ),
        (
            _wrong_shape,
            "openvino",
            pytest.raises(ModelError, match=r"but its spec says \[N, 3, 160, 160, 3\]"),
        ),
        (
            _wrong_classes,
            "onnxruntime",
            pytest.raises(
                ModelError, match=r"output 'logits' has shape \[\?, 3\] but its spec has 2 classes"
            ),
        ),
        (
            _xml_without_bin,
            "auto",
            pytest.raises(ModelError, match=r"weights file .*lonely.bin is missing"),
        ),
        (_text_file, "auto", pytest.raises(ModelError, match=r"unknown model type '.txt'")),
        (
            lambda t: save_model(t / "m.onnx"),
            "tensorflow",
            pytest.raises(UsageError, match=r"--backend 'tensorflow': expected one of"),
        ),
        (lambda t: save_model(t / "m.onnx"), "onnxruntime", nullcontext()),
    ],
)
def test_bad_model_files_are_refused_with_a_reason(tmp_path: Path, make, backend, expect):
    path = make(tmp_path)
    with expect:
        load_backend(path, backend)


def test_the_onnxruntime_backend_refuses_an_openvino_ir(models):
    with pytest.raises(ModelError, match=r"the onnxruntime backend reads \['.onnx'\] files"):
        load_backend(models["xml"], "onnxruntime")


def test_providers_with_an_openvino_model_are_refused(models):
    from edge_hf.backends import BackendOptions

    with pytest.raises(
        UsageError,
        match=r"--providers cuda: execution providers are onnxruntime's, but m.xml runs on openvino",
    ):
        load_backend(models["xml"], "auto", BackendOptions(providers=("cuda",)))


def test_unavailable_provider_is_named():
    assert resolve_providers(("cpu",)) == ["CPUExecutionProvider"]
    with pytest.raises(
        UsageError, match=r"--providers tensorrt: not available in this onnxruntime build"
    ):
        resolve_providers(("tensorrt", "cpu"))


@pytest.mark.parametrize("fmt", ["onnx", "xml"])
def test_bound_inference_stops_allocating_after_warm_up(models, fmt):
    import tracemalloc

    b = load_backend(models[fmt])
    x, out = np.zeros(MOTION_SPEC.input_shape(), np.uint8), np.zeros((1, 2), np.float32)
    b.bind([x], out)
    tracemalloc.start()
    try:
        for _ in range(2500):  # onnxruntime's wrapper caches ~130 objects over ~2000 calls
            b.infer()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(1000):
            b.infer()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1000  # one object per call would be >= 32 kB


@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_bound_buffers_live_as_long_as_the_backend(models, backend):
    """The engine writes to the bound output by address: if the caller drops its arrays, the
    backend must still hold them (freed, the next call writes into reused memory: a segfault)."""
    import gc
    import weakref

    b = load_backend(models["onnx"], backend)
    x, out = np.zeros(MOTION_SPEC.input_shape(), np.uint8), np.zeros((1, 2), np.float32)
    b.bind([x], out)
    refs = weakref.ref(x), weakref.ref(out)
    del x, out
    gc.collect()
    assert all(r() is not None for r in refs)
    b.infer()
    assert np.isfinite(refs[1]()).all()
