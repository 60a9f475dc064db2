"""Bad input to ``python -m export``: one line on stderr naming the thing and the fix, the
documented exit code, no traceback, and nothing half-written left behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from export.__main__ import main
from models.errors import ParityFailed

ONNX = ["--formats", "onnx", "--repeats", "1"]


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err.strip().splitlines()


def _checkpoint(tmp: Path, ckpt: Path, **change) -> Path:
    state = torch.load(ckpt, weights_only=True)
    for k, v in change.items():
        if v is None:
            del state[k]
        else:
            state[k] = v
    torch.save(state, tmp / "edited.pt")
    return tmp / "edited.pt"


def _other_classes(tmp: Path, data: Path) -> Path:
    for cls, src in (("cat", "fall"), ("dog", "wave")):
        (tmp / "other" / cls).mkdir(parents=True)
        for clip in sorted((data / src).glob("*.avi"))[:2]:
            shutil.copy(clip, tmp / "other" / cls)
    return tmp / "other"


def _unreadable(tmp: Path, data: Path) -> Path:
    for cls in sorted(p.name for p in data.iterdir() if p.is_dir()):
        (tmp / "junk" / cls).mkdir(parents=True)
        for k in (1, 2):
            (tmp / "junk" / cls / f"v_{k}.avi").write_bytes(b"not a video")
    return tmp / "junk"


CASES = [
    (
        lambda t, c, d: [c, "--formats", "onnx,openvino-int9"],
        2,
        "--formats: unknown format 'openvino-int9'; did you mean 'openvino-int8'?",
    ),
    (
        lambda t, c, d: [c, "--formats", "onnx", "--fp16"],
        2,
        "--fp16 applies to the openvino format, which --formats does not list",
    ),
    (
        lambda t, c, d: [c, "--formats", "openvino-int8", "--max-drop", "1"],
        2,
        "--max-drop: expected an absolute top-1 drop in (0, 1), e.g. 0.01 for one point",
    ),
    (lambda t, c, d: [c, *ONNX, "--threshold", "fell=0.9"], 2, "the model has no class 'fell'"),
    (lambda t, c, d: [t / "nope.pt", *ONNX], 3, "nope.pt does not exist"),
    (
        lambda t, c, d: [(t / "x.pt").write_bytes(b"\x00junk" * 9) and t / "x.pt", *ONNX],
        3,
        "x.pt: not a PyTorch checkpoint we can read",
    ),
    (  # 4 bytes: torch's legacy unpickler raised struct.error (issue 13)
        lambda t, c, d: [(t / "j.pt").write_bytes(b"junk") and t / "j.pt", *ONNX],
        3,
        "j.pt: not a PyTorch checkpoint we can read (unpack requires a buffer of 4 bytes)",
    ),
    (
        lambda t, c, d: [torch.save({"state_dict": {}}, t / "f.pt") or t / "f.pt", *ONNX],
        3,
        "f.pt: not an edge-hf training checkpoint (missing ['model', 'spec', 'config']",
    ),
    (
        lambda t, c, d: [_checkpoint(t, c, spec=None), *ONNX],
        3,
        "edited.pt: not an edge-hf training checkpoint (missing ['spec']",
    ),
    (
        lambda t, c, d: [_checkpoint(t, c, spec='{"frames": 0}'), *ONNX],
        3,
        "edited.pt: spec: missing field(s) ['classes', 'size', 'stride']",
    ),
    (
        lambda t, c, d: [_checkpoint(t, c, model={}), *ONNX],
        3,
        "edited.pt: its weights do not fit a mobilenetv3_small_100 with 6 classes",
    ),
    (
        lambda t, c, d: [c, *ONNX, "--calib", (t / "empty").mkdir() or t / "empty"],
        4,
        "calibration data: dataset folder",
    ),
    (
        lambda t, c, d: [c, *ONNX, "--calib", _unreadable(t, d)],
        4,
        "junk: no usable videos among 6 ",  # 12 clips: one of each class in test
    ),
    (
        lambda t, c, d: [c, *ONNX, "--calib", _other_classes(t, d)],
        4,
        "has classes ['cat', 'dog'] but the model was trained on ['walk_left'",
    ),
    (
        lambda t, c, d: [_checkpoint(t, c, config='{"arch": "mobilenetv3_small_100"}'), *ONNX],
        4,
        "was trained on 'an unrecorded dataset', which is not here; pass --calib DATASET",
    ),
]


@pytest.mark.parametrize(("argv", "code", "needle"), CASES)
def test_bad_input_is_one_line_and_an_exit_code(
    capsys, tmp_path, tiny_ckpt, tiny_actions, argv, code, needle
):
    out = tmp_path / "out"
    got, err = run(capsys, *argv(tmp_path, tiny_ckpt, tiny_actions), "--out", out)
    assert (got, len(err)) == (code, 1), err
    assert err[0].startswith("export: error: ") and needle in err[0], err[0]
    assert not out.exists()


def test_a_folder_with_files_is_refused_without_force(capsys, tmp_path, tiny_ckpt):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    code, err = run(capsys, tiny_ckpt, *ONNX, "--out", out)
    assert code == 5 and len(err) == 1
    assert "already holds files; choose another folder or pass --force" in err[0]
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_failed_parity_names_the_backend_and_leaves_nothing_behind(
    capsys, tmp_path, tiny_ckpt, monkeypatch
):
    from export import measure

    monkeypatch.setattr(measure, "PARITY_TOL", 0.0)  # any float difference at all now fails
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    code, err = run(capsys, tiny_ckpt, *ONNX, "--out", out, "--force")
    assert code == ParityFailed.exit_code == 6 and len(err) == 1, err
    assert "parity failed for onnx (onnxruntime): max |logit difference|" in err[0]
    assert "(allowed 0)" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left
    assert [p.name for p in out.iterdir()] == ["mine.txt"]  # --force replaces only on success
