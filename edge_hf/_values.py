"""Value checks for the settings table in :mod:`edge_hf.config`. Each takes a value as typed on
the command line (a string) or as read from TOML, and the place it came from ("--every" or
"/etc/edge-hf/config.toml: model.every") to name in errors; it returns the value, typed, or
raises UsageError. Every number has bounds (``Number``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edge_hf.errors import SpecError, UsageError
from edge_hf.spec import Then, check_threshold

_NAME = re.compile(r"[A-Za-z0-9_-]+")  # fullmatch: "$" would let a final newline in


@dataclass(frozen=True)
class Option:
    """One setting: its key in the config file, its flag, its check and default. The core
    settings are listed in :mod:`edge_hf.config`; each sink declares its own (``SinkSection``)."""

    key: str  # path in the config file
    flag: str | None  # None: config file only
    check: Callable[[Any, str], Any]
    default: Any = None
    help: str = ""
    action: str = "value"  # "value" | "append" | "bool"
    metavar: str | None = None


def _fail(where: str, expected: str, value: Any) -> UsageError:
    return UsageError(f"{where}: expected {expected}, found {value!r}")


def text(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _fail(where, "a non-empty string", v)
    return v


def path(v: Any, where: str) -> Path:
    try:
        return Path(text(v, where)).expanduser()
    except RuntimeError:  # ~user for a user that does not exist
        raise _fail(where, "a path (~ only for an existing user)", v) from None


def boolean(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _fail(where, "true or false", v)
    return v


@dataclass(frozen=True)
class Number:
    """A number in ``[lo, hi]`` (``(lo, hi]`` if ``above``): whole if ``kind`` is int. Every
    numeric option has an upper bound, so no value can overflow a timer, a C int or a loop."""

    kind: type  # int or float
    lo: float
    hi: float
    above: bool = False  # lo itself is excluded
    unit: str = ""  # "seconds", "bytes"
    metavar: str = "N"

    def __call__(self, v: Any, where: str) -> Any:
        x = _number(v, self.kind)
        low_ok = x is not None and (x > self.lo if self.above else x >= self.lo)
        if not (low_ok and x <= self.hi):  # also refuses nan
            raise _fail(where, self.expected, v)
        return x

    @property
    def expected(self) -> str:
        what = "a whole number" if self.kind is int else "a number"
        unit = f" of {self.unit}" if self.unit else ""
        lo = f"> {_g(self.lo)}" if self.above else f">= {_g(self.lo)}"
        return f"{what}{unit} {lo} and <= {_g(self.hi)}"


def _g(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _number(v: Any, kind: type) -> Any:
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        try:
            return kind(v.strip()) if len(v) < 100 else None
        except ValueError:
            return None
    if isinstance(v, int) or (kind is float and isinstance(v, float)):
        return kind(v)
    return None


def realarm(v: Any, where: str) -> float:
    """0 (no re-alarm) or seconds between a down level's re-alarms, at least 10 (a phone that
    rings more often than that is not heard better)."""
    if _number(v, float) == 0:
        return 0.0
    try:
        return _realarm(v, where)
    except UsageError:
        raise _fail(where, f"0 (no re-alarm) or {_realarm.expected}", v) from None


realarm.metavar = "SECONDS"  # type: ignore[attr-defined]


# The bounds: wide enough for any real deployment, narrow enough that a typo cannot hang or
# overflow anything (an --every of 10**20 would loop forever, --open-timeout 1e12 overflows
# OpenCV's milliseconds, a stall timeout of 0 would reject every frame).
MAX_EVERY = 100_000  # = sampler.MAX_EVERY (not imported: OpenCV is not needed to read a config)
threads = Number(int, 1, 256)
decoder_threads = Number(int, 0, 64)  # 0: FFmpeg's default
batch = Number(int, 1, 64)
batch_wait = Number(float, 0.0, 0.1, unit="seconds", metavar="SECONDS")
share = Number(float, 0.0, 1.0, metavar="X")  # a share of the picture
max_skip = Number(float, 0.0, 3600.0, above=True, unit="seconds", metavar="SECONDS")
every = Number(int, 1, MAX_EVERY)
hz = Number(float, 0.01, 1000.0, metavar="X")  # once per 100 s up to 1000 times a second
cooldown = Number(float, 0.0, 86_400.0, unit="seconds", metavar="SECONDS")  # up to a day
down_for = Number(float, 0.0, 86_400.0, unit="seconds", metavar="SECONDS")  # 0: no down level
_realarm = Number(float, 10.0, 86_400.0, unit="seconds", metavar="SECONDS")
open_timeout = Number(float, 0.5, 600.0, unit="seconds", metavar="SECONDS")
stall_timeout = Number(float, 0.5, 3600.0, unit="seconds", metavar="SECONDS")
stats_interval = Number(float, 0.1, 86_400.0, unit="seconds", metavar="SECONDS")
reconnect_max = Number(float, 0.1, 3600.0, unit="seconds", metavar="SECONDS")
max_rows = Number(int, 1, 10_000_000)
max_bytes = Number(int, 1024, 2**40, unit="bytes", metavar="BYTES")


def log_level(v: Any, where: str) -> str:
    if v not in ("debug", "info", "warning", "error"):
        raise _fail(where, "one of debug, info, warning, error", v)
    return v


def names(v: Any, where: str) -> tuple[str, ...]:
    """``"tensorrt,cuda,cpu"`` or ``["tensorrt", "cuda", "cpu"]``."""
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise _fail(where, "a comma-separated list of names", v)
    return tuple(i.strip() for i in items if i.strip())


def k_of_n(v: Any, where: str) -> tuple[int, int]:
    k, sep, n = v.partition("/") if isinstance(v, str) and len(v) < 20 else ("", "", "")
    if sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n) <= 1000:
        return int(k), int(n)
    raise _fail(where, "K/N with 1 <= K <= N <= 1000 (e.g. 2/3)", v)


def thresholds(v: Any, where: str) -> tuple[tuple[str, float], ...]:
    """Flags: ``["fall=0.8", …]``; a file: ``{ fall = 0.8 }``. The range is edge_hf.spec's
    ``check_threshold``, the one check every threshold passes."""
    if isinstance(v, dict):
        pairs = list(v.items())
    elif isinstance(v, list) and all(isinstance(t, str) for t in v):
        pairs = [t.partition("=")[::2] for t in v]
    else:  # a file's `thresholds = "fall"` or `= 0.8`
        raise _fail(where, "a table of CLASS = P with 0 < P <= 1 (e.g. { fall = 0.8 })", v)
    out = []
    for name, value in pairs:
        try:
            p = check_threshold(_number(value, float), where)
        except SpecError:
            p = None
        if not name or p is None:
            shown = f"{name}={value}" if isinstance(v, list) else {name: value}
            raise _fail(where, "CLASS=P with 0 < P <= 1 (e.g. fall=0.8)", shown)
        out.append((name, p))
    return tuple(out)


def then_rules(v: Any, where: str) -> tuple[Then, ...]:
    """Flags or a file's list: ``["fall=lying", "fall=lying:0.5:1.5"]`` (CLASS=POSE[:P[:SECONDS]],
    see edge_hf.spec.Then), or ``["none"]``: no class waits."""
    expected = "CLASS=POSE[:P[:SECONDS]] (e.g. fall=lying:0.5:1) or none"
    if not isinstance(v, list) or not v or not all(isinstance(t, str) for t in v):
        raise _fail(where, f"a list of {expected}", v)
    if v == ["none"]:
        return ()
    out = []
    for item in v:
        cls, _, rest = item.partition("=")
        pose, *nums = rest.split(":")
        try:
            rule = Then(cls.strip(), pose.strip(), *(_number(x, float) for x in nums[:2]))
        except (TypeError, ValueError, UsageError):
            rule = None
        if rule is None or len(nums) > 2 or not rule.cls or not rule.pose or rule.problem():
            raise _fail(where, expected, item)
        out.append(rule)
    return tuple(out)


def cameras(v: Any, where: str) -> tuple[str, ...]:
    """Flags: ``["[NAME=]SRC", …]``; a file: ``{ NAME = "SRC" }`` (or ``NAME = { source =
    "SRC", … }``, see ``camera_tables``) or ``["[NAME=]SRC", …]``."""
    if isinstance(v, dict):
        out = []
        for name, src in v.items():
            if not _NAME.fullmatch(name):
                raise UsageError(
                    f"{where}: a camera name is letters, digits, '_' and '-', found {name!r}"
                )
            if isinstance(src, dict):
                if "source" not in src:
                    raise UsageError(f'{where}.{name}: a camera table needs source = "SRC"')
                src = src["source"]
                text(src, f"{where}.{name}.source")
            else:
                text(src, f"{where}.{name}")
            out.append(f"{name}={src}")
        return tuple(out)
    if not isinstance(v, list) or not v or not all(isinstance(s, str) and s for s in v):
        raise _fail(where, "a table of NAME = SOURCE", v)
    return tuple(v)


# A camera's own settings in the file: [cameras.NAME] source = "...", and any of these
# (each overrides the run's for that camera only).
_MOTION_KEYS: dict[str, Callable[[Any, str], Any]] = {
    "enabled": boolean,
    "threshold": share,
    "max_skip": max_skip,
}
_CAMERA_KEYS = ("source", "every", "hz", "thresholds", "down_for", "re_alarm", "motion")


def camera_tables(v: Any, where: str) -> tuple[dict[str, Any], ...]:
    """Each camera's own settings, checked (``{}`` for a camera given as NAME = "SRC"):
    ``every``, ``hz``, ``thresholds``, ``down_for``, ``re_alarm``, ``motion`` (a table of the
    [motion] keys)."""
    if not isinstance(v, dict):
        return tuple({} for _ in cameras(v, where))
    out = []
    for name, raw in v.items():
        if not isinstance(raw, dict):
            out.append({})
            continue
        at = f"{where}.{name}"
        _known(raw, _CAMERA_KEYS, at)
        own: dict[str, Any] = {}
        if "every" in raw and "hz" in raw:
            raise UsageError(f"{at}: every and hz are alternatives; keep one")
        if "every" in raw:
            own["every"] = every(raw["every"], f"{at}.every")
        if "hz" in raw:
            own["hz"] = hz(raw["hz"], f"{at}.hz")
        if "thresholds" in raw:
            own["thresholds"] = thresholds(raw["thresholds"], f"{at}.thresholds")
        if "down_for" in raw:
            own["down_for"] = down_for(raw["down_for"], f"{at}.down_for")
        if "re_alarm" in raw:
            own["realarm"] = realarm(raw["re_alarm"], f"{at}.re_alarm")
        if "motion" in raw:
            m = raw["motion"]
            if not isinstance(m, dict):
                raise _fail(f"{at}.motion", "a table such as { enabled = true }", m)
            _known(m, tuple(_MOTION_KEYS), f"{at}.motion")
            own["motion"] = tuple((k, _MOTION_KEYS[k](x, f"{at}.motion.{k}")) for k, x in m.items())
        out.append(own)
    return tuple(out)


def _known(table: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    import difflib

    for key in table:
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"{where}: unknown key {key!r}{hint} (known: {', '.join(sorted(keys))})"
            )
