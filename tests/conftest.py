"""Shared fixtures: model files and video clips the tests write themselves, and the CLI as a
real subprocess."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest

from edge_hf import synth
from edge_hf.spec import HyperframeSpec
from tests.motion_model import MOTION_SPEC, motion_model

ROOT = Path(__file__).resolve().parent.parent


def save_model(path: Path, spec: HyperframeSpec = MOTION_SPEC, **kw) -> Path:
    """Write an ONNX model honouring ``spec`` (see tests.motion_model.motion_model)."""
    onnx.save(motion_model(spec, **kw), path)
    return path


def save_openvino(onnx_path: Path, xml_path: Path, spec: HyperframeSpec | None = None) -> Path:
    """Convert an ONNX file to OpenVINO IR, (re)writing the spec into rt_info."""
    import openvino as ov

    from edge_hf.spec import spec_from_onnx_metadata, write_openvino_spec

    model = ov.convert_model(str(onnx_path))
    if spec is None:
        meta = {p.key: p.value for p in onnx.load(onnx_path).metadata_props}
        spec = spec_from_onnx_metadata(meta, str(onnx_path))
    write_openvino_spec(model, spec)
    ov.save_model(model, str(xml_path))
    return xml_path


@pytest.fixture
def demo_onnx(tmp_path: Path) -> Path:
    return save_model(tmp_path / "demo.onnx")


@contextlib.contextmanager
def built_once(tmp_path_factory: pytest.TempPathFactory, name: str):
    """A session fixture's folder, built by one pytest-xdist worker and reused by the others
    (`make test` runs two): yields (the folder, whether this worker must build it), under a
    file lock; a build that raises leaves it unbuilt for the next to try."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, shared by its workers
    path, done = root / name, root / f"{name}.built"
    with FileLock(f"{path}.lock"):
        todo = not done.exists()
        path.mkdir(exist_ok=True)
        yield path, todo
        done.touch()


@pytest.fixture(scope="session")
def fall_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real video file: the synthetic demo story (walks, falls, lie-downs), 320x180, 25 fps."""
    path = tmp_path_factory.mktemp("clips") / "story.avi"
    synth.write_clip(path, synth.make_scene("demo", seed=0, size=(180, 320)), 700, fourcc="MJPG")
    return path


def moving_square(path: Path, frames: int, moves: tuple[int, int] = (10, 15)) -> Path:
    """A 64 x 64 MJPG clip of steady noise in which a white square stands still, moves 8 pixels
    a frame from frame ``moves[0]`` to ``moves[1]``, then stands still again: a fall's motion
    between still parts, in frames whose differences a test can count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25, (64, 64))
    rng = np.random.default_rng(0)
    for i in range(frames):
        img = rng.integers(80, 100, (64, 64, 3), dtype=np.uint8)
        x = 8 * (min(max(i, moves[0]), moves[1]) - moves[0])
        img[24:40, x : x + 16] = 250
        out.write(img)
    out.release()
    return path


def run_module(
    module: str, *args: str, timeout: float = 120, **kw
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` as a real subprocess of this interpreter, from the checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        **kw,
    )


def run_cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess[str]:
    """``edge-hf ARGS`` as a real subprocess of this interpreter."""
    return run_module("edge_hf", *args, timeout=timeout, **kw)


def start_cli(*args: str) -> subprocess.Popen[str]:
    """``edge-hf ARGS`` started in the background, stdout and stderr as text pipes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "edge_hf", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size: str = "256k"):
    """A real tmpfs of ``size`` mounted at ``path`` (skips the test where mounting is not
    allowed: it needs root)."""
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        timeout=10,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10)


@pytest.fixture(scope="session")
def tiny_actions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six classes, four clips each in groups of two (UCF101 layout: group 1 is the test split),
    72x96: 12 training and 12 validation videos."""
    from models.synthdata import write_action_dataset  # numpy + OpenCV only

    with built_once(tmp_path_factory, "actions") as (root, todo):
        if todo:
            write_action_dataset(root, 4, (72, 96), seed=3)
    return root


class EdgeHF:
    """``edge-hf ARGS`` running in the background, stdout and stderr going to files (so a
    chatty child never blocks on a full pipe). ``events()`` parses the JSON lines printed so far.

    The child's environment is ours minus the MQTT password variables, plus ``env``.
    """

    def __init__(self, tmp: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.out, self.err = tmp / f"out-{id(self)}.jsonl", tmp / f"err-{id(self)}.log"
        base = {
            k: v
            for k, v in os.environ.items()
            if k not in ("EDGE_HF_MQTT_PASSWORD", "CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET")
        }
        self.env = {**base, "PYTHONPATH": str(ROOT), **(env or {})}
        self.args = args
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> EdgeHF:
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "edge_hf", *self.args],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def events(self) -> list[dict]:
        import json

        lines = self.out.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def signal(self, sig: int, timeout: float = 10.0) -> int:
        """Send ``sig`` and wait (at most ``timeout`` s) for the exit code."""
        self.proc.send_signal(sig)
        return self.proc.wait(timeout)


@pytest.fixture(scope="session")
def tiny_pyramid(tiny_actions: Path, tmp_path_factory: pytest.TempPathFactory):
    """``models.train --recipe pyramid --baseline`` on the tiny actions (64 px, one epoch), as a
    real subprocess: (the runs folder, what it printed). The trainer's test reads its
    output; the export's test exports its pyramid."""
    with built_once(tmp_path_factory, "pyramid-train") as (tmp, todo):
        if todo:
            r = run_module(
                "models.train",
                "--data",
                str(tiny_actions),
                "--recipe",
                "pyramid",
                "--size",
                "64",
                "--epochs",
                "1",
                "--batch",
                "8",
                "--samples-per-clip",
                "1",
                "--name",
                "pyr",
                "--baseline",
                "--out",
                str(tmp / "runs"),
                "--cache",
                str(tmp / "cache"),
                timeout=300,
            )
            assert r.returncode == 0, r.stderr
            (tmp / "stdout.txt").write_text(r.stdout)
    return tmp / "runs", (tmp / "stdout.txt").read_text()
