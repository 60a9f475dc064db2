"""Sources by kind. ``open_source`` picks one from what the user typed after ``--camera``."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from edge_hf.errors import UsageError
from edge_hf.redact import mask_url
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
_NAMED = re.compile(r"^(?P<name>[A-Za-z0-9_-]+)=(?P<src>.+)$")
_DEVICE = re.compile(r"^(/dev/video\d+|\d+)$")

__all__ = ["SCHEMES", "Source", "SourceOptions", "open_source", "split_name"]


def split_name(arg: str) -> tuple[str, str]:
    """``front=rtsp://…`` -> ("front", "rtsp://…"); otherwise a name derived from the source."""
    m = _NAMED.match(arg)
    if m:
        return m["name"], m["src"]
    if _DEVICE.match(arg):
        return (Path(arg).name if arg.startswith("/") else f"video{arg}"), arg
    parts = urlsplit(arg)
    if parts.scheme == "synth":
        return (parts.netloc or "synth"), arg
    if "://" in arg:
        return (parts.hostname or "camera"), arg
    return Path(arg).stem or "camera", arg


def open_source(arg: str, opts: SourceOptions) -> Source:
    """Build (but do not open) the source for one ``--camera`` value."""
    name, src = split_name(arg)
    if _DEVICE.match(src):
        return V4L2Source(src, name, opts)
    if "://" in src:
        scheme = src.split("://", 1)[0].lower()
        if scheme not in SCHEMES:
            raise UsageError(
                f"--camera {mask_url(src)}: unknown scheme {scheme!r}; expected one of "
                f"{sorted(SCHEMES)}, a /dev/videoN device, a camera index or a video file"
            )
        return SCHEMES[scheme](src, name, opts)
    return FileSource(src, name, opts)
