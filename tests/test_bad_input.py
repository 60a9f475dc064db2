"""Hostile input to ``edge-hf`` as real subprocesses (issue 13): each case is one line on stderr,
its documented exit code, no traceback, and an end within its timeout (a hang is a failure).
(``python -m export junk.pt`` is a row of tests/export/test_errors.py.)"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest

from edge_hf.spec import HyperframeSpec, write_onnx_spec
from tests.conftest import ROOT, mounted_tmpfs, run_cli, save_model, save_openvino, start_cli
from tests.motion_model import MOTION_SPEC

CAM = "synth://fall?frames=20"
RUN = ["run", "--camera", CAM]
LONG = "a" * 300  # longer than NAME_MAX (255): ENAMETOOLONG


def _clip(t: Path, name: str = "clip.avi") -> Path:
    from edge_hf import synth

    synth.write_clip(t / name, synth.make_scene("fall", seed=0, size=(90, 160)), 20, fourcc="MJPG")
    return t / name


def _not_utf8_name(t: Path) -> bytes:
    """A real video whose file name is not UTF-8 (renamed: OpenCV cannot even write it)."""
    name = os.fsencode(t) + b"/v_\xff\xfe.avi"
    os.rename(_clip(t), name)
    return name


def _dynamic_classes(t: Path, fmt: str) -> str:
    """A graph with 3 classes whose spec says 2, and whose class count no shape inference can
    know: the output gathers the logits at the indices of NonZero(not NaN), data-dependent."""
    from onnx import TensorProto, helper

    fields = {"frames": 3, "stride": 3, "size": (160, 160), "classes": ("a", "b", "c")}
    path = save_model(t / "dyn.onnx", HyperframeSpec(**fields))
    m = onnx.load(path)
    write_onnx_spec(m, MOTION_SPEC)
    g, out = m.graph, m.graph.output[0].name
    for node in g.node:
        node.output[:] = ["raw" if o == out else o for o in node.output]
    g.initializer.append(helper.make_tensor("one", TensorProto.INT64, [], [1]))
    g.node.extend(
        [
            helper.make_node("IsNaN", ["raw"], ["nan"]),
            helper.make_node("Not", ["nan"], ["ok"]),
            helper.make_node("NonZero", ["ok"], ["nz"]),
            helper.make_node("Gather", ["nz", "one"], ["idx"], axis=0),
            helper.make_node("Gather", ["raw", "idx"], [out], axis=1),
        ]
    )
    g.output[0].type.tensor_type.shape.dim[1].dim_param = "C"
    onnx.save(m, path)
    return str(path if fmt == "onnx" else save_openvino(path, t / "dyn.xml", MOTION_SPEC))


def _junk_xml(t: Path) -> str:
    (t / "junk.xml").write_text("junk\n")
    (t / "junk.bin").write_bytes(b"\0" * 16)
    return str(t / "junk.xml")


def _junk_onnx(t: Path) -> str:
    """OpenVINO tries its TensorFlow frontend on it, which prints absl lines on stderr."""
    (t / "junk.onnx").write_bytes(b"\x00garbage" * 64)
    return str(t / "junk.onnx")


def _config(t: Path, text: str) -> str:
    (t / "config.toml").write_text(text)
    return str(t / "config.toml")


ROWS = [
    # 1. OpenCV segfaults on a name or URL that is not UTF-8: refused before it gets there
    (lambda t: ["run", "--camera", _not_utf8_name(t)], 2, "v_\\xff\\xfe.avi: the file name has"),
    (
        lambda t: ["run", "--camera", b"rtsp://127.0.0.1:9/\xff"],
        2,
        "percent-encode them: rtsp://127.0.0.1:9/%FF",
    ),
    # 2. tracebacks
    (lambda t: ["run", "--camera", f"{LONG}.mp4"], 4, "the name is too long for the file system"),
    (lambda t: [*RUN, "--model", f"{LONG}.onnx"], 3, "the name is too long for the file system"),
    (lambda t: [*RUN, "--cooldown", "inf"], 2, "--cooldown: expected a number of seconds >= 0"),
    (lambda t: [*RUN, "--open-timeout", "inf"], 2, "--open-timeout: expected a number of seconds"),
    (lambda t: [*RUN, "--stall-timeout", "inf"], 2, "--stall-timeout: expected a number of"),
    (lambda t: [*RUN, "--open-timeout", "1e12"], 2, "<= 600, found '1e12'"),
    (lambda t: [*RUN, "--cooldown", "nan"], 2, "--cooldown: expected"),
    (lambda t: [*RUN, "--down-for", "inf"], 2, "--down-for: expected a number of seconds >= 0"),
    (lambda t: [*RUN, "--re-alarm", "5"], 2, "--re-alarm: expected 0 (no re-alarm) or a number"),
    (
        lambda t: [*RUN, "--model", _dynamic_classes(t, "onnx")],
        3,
        "output 'logits' is [N, ?] in the graph and really has shape [1, 3] for one hyperframe, "
        "but its spec has 2 classes",
    ),
    (
        lambda t: [*RUN, "--model", _dynamic_classes(t, "xml")],
        3,
        "dyn.xml: output 'logits' is [N, ?] in the graph and really has shape [1, 3]",
    ),
    # 3. hangs: bounded with the limit named
    (lambda t: [*RUN, "--every", "99999999999999999999"], 2, "<= 100000, found '9999"),
    (lambda t: [*RUN, "--hz", "1e-300"], 2, "--hz: expected a number >= 0.01 and <= 1000"),
    (lambda t: [*RUN, "--open-timeout", "0"], 2, "--open-timeout: expected a number of seconds"),
    (lambda t: [*RUN, "--k-of-n", "1/99999999999"], 2, "K <= N <= 1000"),
    # smaller
    (lambda t: [*RUN, "--stall-timeout", "0"], 2, "--stall-timeout: expected a number of seconds"),
    (lambda t: [*RUN, "--mqtt", "mqtt://h:0"], 2, "--mqtt mqtt://h:0: port 0"),
    (
        lambda t: [*RUN, "--mqtt", "mqtts://h", "--mqtt-ca", f"{LONG}.pem"],
        5,
        ".pem cannot be opened: the name is too long for the file system",
    ),
    (lambda t: [*RUN, "--mqtt", "mqtt://h/#"], 2, "mqtt://h/#: unexpected '?' or '#'"),
    (lambda t: ["run", "--camera", "synth://demo?frames=-5"], 2, "frames=1 or more"),
    (lambda t: ["run", "--camera", str(t)], 4, "is a directory, not a file"),
    (lambda t: [*RUN, "--model", str(t)], 3, "is a directory, not a file"),
    (lambda t: [*RUN, "--model", _junk_xml(t)], 3, "junk.xml: not an OpenVINO IR"),
    (
        lambda t: ["info", _junk_onnx(t), "--backend", "openvino"],
        3,
        "junk.onnx: not a loadable OpenVINO/ONNX model (Unable to read the model",
    ),
    (
        lambda t: ["run", "--config", _config(t, "[cameras]\nporch = 'ftp://x'\n")],
        2,
        "config.toml: cameras.porch ftp://x: unknown scheme 'ftp'",
    ),
    (
        lambda t: ["run", "--config", _config(t, "[cameras]\nporch = '/nonexistent.mp4'\n")],
        4,
        "config.toml: cameras.porch: video file /nonexistent.mp4 does not exist",
    ),
    (
        lambda t: ["run", "--config", _config(t, "[cameras]\nporch = 'synth://nothing'\n")],
        2,
        "config.toml: cameras.porch synth://nothing: unknown synth scene",
    ),
    (
        lambda t: ["run", "--config", _config(t, f"cameras = ['{CAM}', '{CAM}']\n")],
        2,
        "config.toml: cameras: camera names must be unique, found ['fall', 'fall']",
    ),
    (
        lambda t: [
            *("run", "--config"),
            _config(t, f"[alerts]\nthresholds = 'fall'\n[cameras]\na = '{CAM}'"),
        ],
        2,
        "alerts.thresholds: expected a table of CLASS = P with 0 < P <= 1 (e.g. { fall = 0.8 }), "
        "found 'fall'",
    ),
]


@pytest.mark.parametrize(("args", "code", "needle"), ROWS)
def test_bad_input_is_one_line_with_a_documented_exit_code(tmp_path: Path, args, code, needle):
    _check(run_cli(*args(tmp_path), timeout=60), code, needle)


def _check(r: subprocess.CompletedProcess, code: int, needle: str) -> None:
    assert r.returncode == code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr  # also: no OpenVINO/absl noise, no traceback
    assert lines[0].startswith("edge-hf: error: ") and needle in lines[0], lines[0]
    assert r.stdout == "" and "core.cpp" not in r.stderr and "error number" not in r.stderr


# --------------------------------------------------------------------------- as a service user

_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    """``edge-hf ARGS`` as the unprivileged user 'nobody' (these tests run as root, and root
    enters any directory, so EACCES needs another user)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/nonexistent"}
    cmd = [*_NOBODY, sys.executable, "-m", "edge_hf", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


def _nobody_can_run_edge_hf() -> str:
    if os.geteuid() != 0:
        return ""  # not root: a chmod 000 directory is enough
    if shutil.which("setpriv") is None:
        return "needs setpriv (util-linux) to drop to an unprivileged user"
    r = subprocess.run(
        [*_NOBODY, sys.executable, "-c", "import edge_hf.cli"],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    return "" if r.returncode == 0 else "user nobody cannot read this checkout or its venv"


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (lambda d: [*RUN, "--model", str(save_model(d / "m.onnx"))], 3, "m.onnx cannot be read"),
        (lambda d: ["run", "--camera", str(_clip(d))], 4, "clip.avi cannot be read"),
    ],
)
def test_a_directory_the_user_cannot_enter(tmp_path: Path, args, code, needle):
    why = _nobody_can_run_edge_hf()
    if why:
        pytest.skip(why)
    closed = tmp_path / "closed"
    closed.mkdir()
    argv = args(closed)
    closed.chmod(0o700 if os.geteuid() == 0 else 0o000)  # root: owned by root, so nobody is out
    try:
        r = _as_nobody(*argv) if os.geteuid() == 0 else run_cli(*argv, timeout=60)
    finally:
        closed.chmod(0o755)
    _check(r, code, needle)
    assert "permission denied for this user" in r.stderr


# --------------------------------------------------------------------------- signals


def test_sigterm_during_the_first_open_of_a_silent_camera_stops_within_2_s():
    """A camera that accepts the TCP connection and never answers: OpenCV's open blocks for
    --open-timeout (30 s here); SIGTERM must end the run within 2 s anyway."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(60)
        port = server.getsockname()[1]
        args = ["run", "--camera", f"rtsp://127.0.0.1:{port}/s", "--open-timeout", "30"]
        proc = start_cli(*args)
        try:
            conn, _ = server.accept()  # edge-hf is inside the open now
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            t0 = time.monotonic()
            proc.wait(timeout=10)
            took = time.monotonic() - t0
            conn.close()
        finally:
            proc.kill()
            out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert took < 2.0, (took, err)
    assert "Traceback" not in err


def test_log_level_is_accepted_after_the_command():
    r = run_cli("run", "--camera", CAM, "--fast", "--log-level", "warning", timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # no INFO lines


# --------------------------------------------------------------------------- check-config = run

SYNTH = "[cameras]\nporch = 'synth://fall?frames=20'\n"


def _junk_video(t: Path, mounts) -> str:
    (t / "junk.mp4").write_bytes(b"not a video" * 64)
    return f"[cameras]\nporch = '{t / 'junk.mp4'}'\n"


def _snapshots_below_a_file(t: Path, mounts) -> str:
    (t / "f").write_text("")
    return f"{SYNTH}[snapshots]\nenabled = true\ndir = '{t / 'f' / 'snaps'}'\n"


def _snapshots_read_only(t: Path, mounts) -> str:
    """A real read-only mount (as under systemd's ProtectSystem= outside ReadWritePaths=):
    even root cannot write there."""
    ro = mounts.enter_context(mounted_tmpfs(t / "ro", "64k"))
    r = subprocess.run(["mount", "-o", "remount,ro", str(ro)], capture_output=True, timeout=10)
    if r.returncode != 0:
        pytest.skip(f"cannot remount read-only ({r.stderr.strip()})")
    return f"{SYNTH}[snapshots]\nenabled = true\ndir = '{ro / 'snaps'}'\n"


# (the config file, or a function of the folder and an ExitStack writing it; {t}: the folder),
# the exit code, what the one line says
SAME = [
    (
        "[cameras]\nporch = '{t}/nope.mp4'\n",
        4,
        "cameras.porch: video file {t}/nope.mp4 does not exist",
    ),
    ("[cameras]\nporch = '{t}'\n", 4, "cameras.porch: video file {t} is a directory, not a file"),
    (_junk_video, 4, "cannot decode video file {t}/junk.mp4; is it a video"),
    (_snapshots_below_a_file, 5, "--snapshot-dir {t}/f/snaps: cannot use it (Not a directory)"),
    (_snapshots_read_only, 5, "--snapshot-dir {t}/ro/snaps: cannot use it (Read-only file"),
    (
        SYNTH + "[alerts]\nscreen = { fall = 0.5 }\n",
        2,
        "--screen-threshold (alerts.screen) is set but there is no confirming model; add "
        "--confirm MODEL (model.confirm)",
    ),
    ("[cameras]\nporch = 'ftp://x'\n", 2, "cameras.porch ftp://x: unknown scheme 'ftp'"),
    (SYNTH + "[model]\npath = '{t}/nope.onnx'\n", 3, "model file {t}/nope.onnx does not exist"),
]


@pytest.mark.parametrize(("text", "code", "needle"), SAME)
def test_check_config_refuses_what_run_refuses_in_the_same_words(tmp_path, text, code, needle):
    with contextlib.ExitStack() as mounts:
        body = text(tmp_path, mounts) if callable(text) else text.replace("{t}", str(tmp_path))
        conf = _config(tmp_path, body)
        runs = run_cli("run", "--config", conf, "--fast", timeout=60)
        checks = run_cli("check-config", conf, timeout=60)
    needle = needle.replace("{t}", str(tmp_path))
    _check(runs, code, needle)
    _check(checks, code, needle)
    assert runs.stderr == checks.stderr


def test_an_unreadable_camera_file_is_refused_by_both():
    """As the service user 'nobody', a camera file in a folder only root may enter."""
    import tempfile

    why = _nobody_can_run_edge_hf()
    if why:
        pytest.skip(why)
    with tempfile.TemporaryDirectory() as d:  # in /tmp, not below pytest's private folder
        t = Path(d)
        t.chmod(0o755)
        closed = t / "closed"
        closed.mkdir()
        conf = _config(t, f"[cameras]\nporch = '{_clip(closed)}'\n")
        Path(conf).chmod(0o644)
        closed.chmod(0o700 if os.geteuid() == 0 else 0o000)  # root owns it: nobody is out
        try:
            run = _as_nobody if os.geteuid() == 0 else lambda *a: run_cli(*a, timeout=60)
            runs, checks = run("run", "--config", conf), run("check-config", conf)
        finally:
            closed.chmod(0o755)
    for r in (runs, checks):
        _check(r, 4, "clip.avi cannot be read: permission denied for this user")
    assert runs.stderr == checks.stderr
