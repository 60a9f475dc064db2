"""Sources by kind. ``open_source`` picks one from what the user typed after ``--camera``.

Everything that reaches OpenCV is checked here first: OpenCV crashes (SIGSEGV) on a string that
is not UTF-8, and reports a missing, unreadable or too-long file name as "cannot open".
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, urlsplit

from edge_hf.errors import SourceError, UsageError
from edge_hf.paths import file_problem
from edge_hf.redact import mask_url, printable
from edge_hf.sources.base import Source, SourceOptions
from edge_hf.sources.file import FileSource
from edge_hf.sources.stream import StreamSource
from edge_hf.sources.synth import SynthSource
from edge_hf.sources.v4l2 import V4L2Source

# scheme -> source class; a path or a device index has no scheme.
SCHEMES = {
    "rtsp": StreamSource,
    "rtsps": StreamSource,
    "http": StreamSource,
    "https": StreamSource,
    "synth": SynthSource,
}
_NAMED = re.compile(r"^(?P<name>[A-Za-z0-9_-]+)=(?P<src>.+)$", re.DOTALL)
_DEVICE = re.compile(r"/dev/video\d+|\d+", re.ASCII)  # fullmatch

__all__ = ["SCHEMES", "Source", "SourceOptions", "is_device", "open_source", "split_name"]


def is_device(arg: str) -> bool:
    """Whether a ``--camera`` value names a V4L2 device (``/dev/videoN`` or an index)."""
    return bool(_DEVICE.fullmatch(split_name(arg)[1]))


def split_name(arg: str) -> tuple[str, str]:
    """``front=rtsp://…`` -> ("front", "rtsp://…"); otherwise a name derived from the source."""
    m = _NAMED.match(arg)
    if m:
        return m["name"], m["src"]
    if _DEVICE.fullmatch(arg):
        return (Path(arg).name if arg.startswith("/") else f"video{arg}"), arg
    try:
        parts = urlsplit(arg)
        host = parts.hostname
    except ValueError:  # e.g. an unbalanced '[' in the host; open_source says what is wrong
        return "camera", arg
    if parts.scheme == "synth":
        return (parts.netloc or "synth"), arg
    if "://" in arg:
        return (host or "camera"), arg
    return Path(arg).stem or "camera", arg


def open_source(
    arg: str, opts: SourceOptions, where: str = "--camera", password: str | None = None
) -> Source:
    """Build (but do not open) the source for one ``--camera`` value. ``where`` names it in
    errors (``--camera`` or the config file's key); ``password`` goes into a network
    camera's URL (see :mod:`edge_hf.credentials`)."""
    name, src = split_name(arg)
    check_text(src, where)
    if _DEVICE.fullmatch(src):
        return V4L2Source(src, name, opts)
    if "://" not in src:
        problem = file_problem(Path(src))
        if problem:
            raise SourceError(f"{where}: video file {printable(src)} {problem}")
        return FileSource(src, name, opts)
    scheme = src.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise UsageError(
            f"{where} {mask_url(src)}: unknown scheme {scheme!r}; expected one of "
            f"{sorted(SCHEMES)}, a /dev/videoN device, a camera index or a video file"
        )
    try:
        if SCHEMES[scheme] is StreamSource:
            return StreamSource(src, name, opts, password)
        return SCHEMES[scheme](src, name, opts)
    except UsageError as e:
        raise UsageError(f"{where} {e}") from None


def check_text(src: str, where: str) -> None:
    """Refuse what OpenCV cannot be handed: bytes that are not UTF-8 (it segfaults), control
    characters (a NUL ends the string early) and white space in a URL."""
    shown = printable(mask_url(src))
    is_url = "://" in src
    if shown == mask_url(src) and not (is_url and any(c.isspace() for c in src)):
        return
    if not is_url:
        raise UsageError(
            f"{where} {shown}: the file name has bytes that are not UTF-8 or control "
            f"characters, which OpenCV cannot open; rename the file (e.g. `mv -- FILE clip.mp4`)"
        )
    try:
        fixed = quote(src.encode("utf-8", "surrogateescape"), safe=":/?#[]@!$&'()*+,;=%~")
        hint = f": {mask_url(fixed)}"
    except UnicodeEncodeError:  # a lone surrogate, not a byte from argv or the file system
        hint = ""
    raise UsageError(
        f"{where} {shown}: the URL has bytes that are not UTF-8, control characters or spaces; "
        f"percent-encode them{hint}"
    )
