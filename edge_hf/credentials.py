"""Camera passwords kept off the command line, where every user of the machine can read them
(``ps``). A network camera's URL names the user only, ``porch=rtsp://admin@10.0.0.7/s1``, and the
password for camera NAME comes from the first of:

1. ``--camera-password-dir DIR`` (``capture.password_dir``): the file ``DIR/camera-NAME-password``;
2. the environment variable ``EDGE_HF_CAMERA_PASSWORD_NAME`` (NAME in capitals, anything but
   letters and digits as '_');
3. ``$CREDENTIALS_DIRECTORY/camera-NAME-password`` (systemd
   ``LoadCredential=camera-NAME-password:/etc/edge-hf/camera-NAME-password``).

A password in the URL itself still works; given on the command line it draws a warning.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote, urlsplit

from edge_hf.errors import SourceError, UsageError
from edge_hf.paths import read_secret, secret_there


def credential_name(camera: str) -> str:
    return f"camera-{camera}-password"


def env_name(camera: str) -> str:
    return "EDGE_HF_CAMERA_PASSWORD_" + re.sub(r"[^A-Z0-9]", "_", camera.upper())


def camera_password(camera: str, src: str, where: str, password_dir: Path | None) -> str | None:
    """The password for ``camera`` from the places in the module docstring, or None."""
    password, origin = _find(camera, password_dir)
    if password is None:
        return None
    user, has_password = _userinfo(src)
    if "://" not in src or src.lower().startswith("synth://"):
        raise UsageError(
            f"{where}: a password for camera {camera!r} was given ({origin}) but it is not a "
            f"network camera; remove the password or rename the camera"
        )
    if not user:
        raise UsageError(
            f"{where}: a password for camera {camera!r} was given ({origin}) but its URL names "
            f"no user; use rtsp://USER@host/…"
        )
    if has_password:
        raise UsageError(
            f"{where}: camera {camera!r} has a password in its URL and another one ({origin}); "
            f"remove the one in the URL"
        )
    return password


def _find(camera: str, password_dir: Path | None) -> tuple[str | None, str]:
    name = credential_name(camera)
    if password_dir is not None and secret_there(Path(password_dir) / name):
        path = Path(password_dir) / name
        return _read(path, "--camera-password-dir"), str(path)
    if os.environ.get(env_name(camera)):
        return os.environ[env_name(camera)], f"${env_name(camera)}"
    creds = os.environ.get("CREDENTIALS_DIRECTORY")
    if creds and secret_there(Path(creds) / name):
        path = Path(creds) / name
        return _read(path, "the systemd credential"), str(path)
    return None, ""


def _read(path: Path, what: str) -> str:
    return read_secret(path, what, SourceError, "the camera's password")


def _userinfo(url: str) -> tuple[str, bool]:
    """(user, whether a password is there too) of a URL; ("", False) when it has none."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return "", False
    userinfo, at, _ = netloc.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    return (user, bool(colon)) if at else ("", False)


def with_password(url: str, password: str) -> str:
    """``rtsp://admin@cam/s`` + ``p@ss`` -> ``rtsp://admin:p%40ss@cam/s``: percent-encoded, as
    a URL needs (FFmpeg decodes it before authenticating)."""
    scheme, _, rest = url.partition("://")
    netloc = urlsplit(url).netloc
    userinfo, _, hostport = netloc.rpartition("@")
    return f"{scheme}://{userinfo}:{quote(password, safe='')}@{hostport}{rest[len(netloc) :]}"


def password_on_command_line(src: str) -> bool:
    return "://" in src and _userinfo(src)[1]
