"""Keep secrets out of anything printed: logs, events, errors."""

from __future__ import annotations

import re

# A URL runs from its scheme to the next white space; text around it is left alone.
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S*")
# Query or matrix parameters whose value is a secret, by (part of) their name:
# ?password=…, &pwd=…, ;token=…, ?api_key=…, &X-Amz-Signature=…
_SECRET_PARAM = re.compile(
    r"(?P<key>[?&;][^=&;#\s]*?(?:pass|pwd|pw|token|key|secret|auth|sig|cred)[^=&;#\s]*=)"
    r"(?P<value>[^&;#\s]*)",
    re.IGNORECASE,
)


def mask_url(text: str) -> str:
    """``rtsp://admin:hunter2@cam/x`` -> ``rtsp://admin:***@cam/x``, and the values of secret-named
    query parameters (``?user=admin&password=x`` -> ``?user=admin&password=***``), for every URL
    in ``text``; other text unchanged.

    It errs on the side of hiding: everything between the first ':' after the user and the
    *last* '@' is the password, since a password may itself contain '@', '/' or ':' (which
    FFmpeg then misreads, but the secret is still a secret).
    """
    return _URL.sub(lambda m: _mask_one(m[0]), text)


def _mask_one(url: str) -> str:
    """Both readings' secrets are hidden at once (their spans merged), so that neither can
    uncover the other's: in ``rtsp://cam:554?password=@x`` the last '@' is inside a query value."""
    scheme, _, rest = url.partition("://")
    spans = [(m.start("value"), m.end("value")) for m in _SECRET_PARAM.finditer(rest)]
    userinfo, at, _ = rest.rpartition("@")
    if at and ":" in userinfo:
        spans.append((userinfo.index(":") + 1, len(userinfo)))
    out, pos = [], 0
    for start, end in sorted(spans):
        if out and start <= pos:  # overlaps or touches the previous span: extend it
            pos = max(pos, end)
            continue
        out += [rest[pos:start], "***"]
        pos = end
    return f"{scheme}://" + "".join(out) + rest[pos:]


def printable(text: str) -> str:
    """``text`` safe to print on one line: bytes that are not UTF-8 (which Python keeps as
    surrogates, e.g. from a file name) as ``\\xff``, control characters as ``\\n``, ``\\x00``…"""
    return "".join(c if c.isprintable() and c < "\ud800" else _escape(c) for c in text)


def _escape(c: str) -> str:
    if "\udc80" <= c <= "\udcff":  # an undecodable byte from the file system or argv
        return f"\\x{ord(c) - 0xDC00:02x}"
    return c if c.isprintable() and not "\ud800" <= c <= "\udfff" else repr(c)[1:-1]
