"""Camera passwords from a directory, the environment or a systemd credential, and a real
FFmpeg open that sends them (a local HTTP camera that asks for Basic authentication)."""

from __future__ import annotations

import base64
import json
import socket
import threading
from contextlib import nullcontext
from pathlib import Path

import pytest

from edge_hf.credentials import camera_password, env_name, with_password
from edge_hf.errors import SourceError, UsageError
from edge_hf.sources import SourceOptions, open_source
from tests.conftest import run_cli

URL = "rtsp://admin@10.0.0.7/s1"


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("EDGE_HF_CAMERA_PASSWORD_PORCH", "CREDENTIALS_DIRECTORY"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def test_password_sources_in_order(clean_env, tmp_path: Path):
    creds, pwdir = tmp_path / "creds", tmp_path / "dir"
    creds.mkdir(), pwdir.mkdir()
    assert camera_password("porch", URL, "--camera", None) is None
    (creds / "camera-porch-password").write_text("from-systemd\n")
    clean_env.setenv("CREDENTIALS_DIRECTORY", str(creds))
    assert camera_password("porch", URL, "--camera", None) == "from-systemd"
    clean_env.setenv("EDGE_HF_CAMERA_PASSWORD_PORCH", "from-env")
    assert camera_password("porch", URL, "--camera", pwdir) == "from-env"  # no file for porch
    (pwdir / "camera-porch-password").write_text("from-dir\r\n")
    assert camera_password("porch", URL, "--camera", pwdir) == "from-dir"
    assert camera_password("door", URL, "--camera", pwdir) is None  # other cameras: nothing


@pytest.mark.parametrize(
    ("src", "expect"),
    [
        ("rtsp://10.0.0.7/s1", pytest.raises(UsageError, match=r"its URL names no user")),
        ("rtsp://admin:x@10.0.0.7/s1", pytest.raises(UsageError, match=r"remove the one in")),
        ("/dev/video0", pytest.raises(UsageError, match=r"it is not a network camera")),
        ("synth://demo", pytest.raises(UsageError, match=r"it is not a network camera")),
        (URL, nullcontext()),
    ],
)
def test_a_password_must_have_somewhere_to_go(clean_env, src, expect):
    clean_env.setenv("EDGE_HF_CAMERA_PASSWORD_PORCH", "pw")
    with expect:
        camera_password("porch", src, "cfg.toml: cameras.porch", None)


def test_unreadable_and_empty_files_are_named(clean_env, tmp_path: Path):
    (tmp_path / "camera-porch-password").mkdir()
    with pytest.raises(SourceError, match=r"camera-porch-password: cannot read it"):
        camera_password("porch", URL, "--camera", tmp_path)
    (tmp_path / "camera-door-password").write_text("\n")
    with pytest.raises(SourceError, match=r"camera-door-password is empty"):
        camera_password("door", URL, "--camera", tmp_path)


def test_names_and_percent_encoding():
    assert env_name("front-door") == "EDGE_HF_CAMERA_PASSWORD_FRONT_DOOR"
    assert env_name("10.0.0.7") == "EDGE_HF_CAMERA_PASSWORD_10_0_0_7"
    assert with_password(URL, "p@ss/w:r d") == "rtsp://admin:p%40ss%2Fw%3Ar%20d@10.0.0.7/s1"
    assert with_password("http://u@h:81/a?b=c", "x") == "http://u:x@h:81/a?b=c"


class BasicAuthCamera:
    """Accepts HTTP connections, answers 401 with a Basic challenge, records the credentials
    each request carried. Enough to see what FFmpeg sends; it never streams."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(10)
        self.port = self.sock.getsockname()[1]
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        for _ in range(3):  # FFmpeg: a first request, then one with credentials
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                head = b""
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                for line in head.decode("latin-1").splitlines():
                    if line.lower().startswith("authorization: basic "):
                        self.seen.append(base64.b64decode(line.split()[-1]).decode())
                conn.sendall(
                    b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm="cam"\r\n'
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                )

    def close(self) -> None:
        self.sock.close()
        self.thread.join(5)


def test_ffmpeg_sends_the_password_from_the_environment_decoded(clean_env):
    secret = "p@ss/w:r%d ok"  # every character a URL would mangle
    clean_env.setenv("EDGE_HF_CAMERA_PASSWORD_PORCH", secret)
    cam = BasicAuthCamera()
    try:
        url = f"http://admin@127.0.0.1:{cam.port}/s"
        password = camera_password("porch", url, "--camera", None)
        src = open_source(f"porch={url}", SourceOptions(open_timeout=3), "--camera", password)
        assert secret not in src.display and "admin:***@" in src.display
        with pytest.raises(SourceError) as e:
            src.open()  # 401 for ever: it cannot open, but it has said who it is
        assert secret not in str(e.value)
    finally:
        cam.close()
    assert f"admin:{secret}" in cam.seen


def test_check_config_says_set_and_never_shows_it(tmp_path: Path):
    (tmp_path / "camera-porch-password").write_text("hunter2\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f"[cameras]\nporch = '{URL}'\ndoor = 'synth://demo'\n"
        f"[capture]\npassword_dir = '{tmp_path}'\n"
    )
    r = run_cli("check-config", str(cfg), timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["run"]["camera_passwords"] == ["set", None]
    assert "hunter2" not in r.stdout + r.stderr


def test_a_password_on_the_command_line_is_warned_about_and_masked():
    url = "rtsp://admin:p@ss@127.0.0.1:9/s?token=hunter2"
    # a bad --threshold stops the run after the settings are built, before any camera opens
    r = run_cli("run", "--camera", f"porch={url}", "--threshold", "nope=0.5", timeout=60)
    assert r.returncode == 2, r.stderr
    warning, error = r.stderr.strip().splitlines()
    assert "rtsp://admin:***@127.0.0.1:9/s?token=***: a password on the command line" in warning
    assert "$EDGE_HF_CAMERA_PASSWORD_PORCH" in warning and "no class 'nope'" in error
    assert "ss@" not in r.stderr and "hunter2" not in r.stderr


def test_a_password_dir_that_cannot_be_looked_into_is_named(clean_env, tmp_path: Path):
    long_dir = tmp_path / ("d" * 300)  # ENAMETOOLONG: exists() would raise
    with pytest.raises(SourceError, match=r"--camera-password-dir .*: cannot read it"):
        camera_password("porch", URL, "--camera", long_dir)
