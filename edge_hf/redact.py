"""Keep secrets out of anything printed: logs, events, errors."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:@/]*):(?P<pw>[^@/]*)@")


def mask_url(url: str) -> str:
    """``rtsp://admin:hunter2@cam/x`` -> ``rtsp://admin:***@cam/x``; other text unchanged."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", url)
