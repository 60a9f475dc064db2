"""Settings for ``edge-hf run``: one table of options, each with its flag, its key in the TOML
config file, how to check a value and its default. Values come from, in order: the flag, the
file, the default. A file with an unknown key is refused with the key's path. The result is
frozen data (``Settings``), checked once here and passed inward.

    log_level = "info"
    [cameras]                      # NAME = SOURCE; --camera on the command line replaces these
    porch = "rtsp://10.0.0.7/s1"
    [model]   path, backend, providers, threads, every, hz
    [alerts]  thresholds = { fall = 0.8 }  (--threshold adds to / overrides these), k_of_n, cooldown,
              then = ["fall=lying"] (or ["none"]; default: the model's), down_for, re_alarm
    [capture] fast, loop, stall_timeout, open_timeout, password_dir
    [mqtt]    url, password_file, ... ; [spool] dir, ...   (declared by the MQTT sink)

The core options are listed here; every sink in ``edge_hf.sinks.SINKS`` declares its own
(``SinkSection.options``), checked the same way, and turns them into its options object.
"""

from __future__ import annotations

import argparse
import difflib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from edge_hf._values import (  # noqa: F401  (the checks are part of this module's interface)
    MAX_EVERY,
    Number,
    Option,
    _fail,
    batch,
    batch_wait,
    boolean,
    camera_tables,
    cameras,
    cooldown,
    decoder_threads,
    down_for,
    every,
    hz,
    k_of_n,
    log_level,
    max_bytes,
    max_rows,
    max_skip,
    names,
    open_timeout,
    path,
    realarm,
    reconnect_max,
    share,
    stall_timeout,
    stats_interval,
    text,
    then_rules,
    threads,
    thresholds,
)
from edge_hf.alerts import DEFAULT_COOLDOWN, DEFAULT_DOWN_FOR
from edge_hf.credentials import camera_password, env_name, password_on_command_line
from edge_hf.errors import UsageError
from edge_hf.redact import mask_url
from edge_hf.sinks import SINKS

if TYPE_CHECKING:
    from edge_hf.runtime import RunConfig

log = logging.getLogger("edge_hf")

# --------------------------------------------------------------------------- the table


# fmt: off
CORE: tuple[Option, ...] = (
    # key                    flag                   check         default  help                                                               action    metavar
    Option("log_level",      None,                  log_level,    "info",  "debug, info, warning or error"),
    Option("cameras",        "--camera",            cameras,      (),      "/dev/videoN, an index, rtsp://…, http://…, a video file or synth://NAME; repeatable", "append", "[NAME=]SRC"),
    Option("model.path",     "--model",             path,         None,    "a .onnx or OpenVINO .xml with an edge-hf spec (default: the embedded demo model)"),
    Option("model.backend",  "--backend",           text,         "auto",  "auto (by file type), onnxruntime or openvino"),
    Option("model.providers", "--providers",        names,        (),      "onnxruntime providers in order, e.g. tensorrt,cuda,cpu"),
    Option("model.threads",  "--threads",           threads,      0,       "inference threads (default: 1, leaving cores to decode video)"),
    Option("model.every",    "--every",             every,        1,       "run the model every N source frames"),
    Option("model.hz",       "--hz",                hz,           None,    "run the model about this many times a second"),
    Option("alerts.thresholds", "--threshold",      thresholds,   (),      "alert threshold for a class (default: the model's); repeatable", "append", "CLASS=P"),
    Option("model.confirm",  "--confirm",           path,         None,    "two-stage mode: a second model (e.g. a temporal pyramid) that must confirm what --model screens (docs/runtime.md: two-stage alerts)", metavar="MODEL"),
    Option("alerts.screen",  "--screen-threshold",  thresholds,   (),      "two-stage mode: the screening model's score for a class that sends a hyperframe to --confirm (default: 0.5, or the alert threshold if lower); repeatable", "append", "CLASS=P"),
    Option("alerts.k_of_n",  "--k-of-n",            k_of_n,       (2, 3),  "start an alert when K of the last N scores pass", metavar="K/N"),
    Option("alerts.cooldown", "--cooldown",         cooldown,     DEFAULT_COOLDOWN, "seconds of quiet after an alert ends"),
    Option("alerts.down_for", "--down-for",         down_for,     None,    f"a class that waits for a pose (a fall for lying): a second alert, CLASS_down, once its person has been down this many seconds; 0: none (default {DEFAULT_DOWN_FOR:g})"),
    Option("alerts.re_alarm", "--re-alarm",         realarm,      0.0,     "seconds between the down alert's re-alarms while the person stays down (at least 10; 0: none)"),
    Option("alerts.then",    "--then",              then_rules,   None,    "an alert class waits for a pose after it (a fall for lying) for up to SECONDS: CLASS=POSE[:P[:SECONDS]], or none (default: the model's; docs/runtime.md); repeatable", "append", "CLASS=POSE"),
    Option("capture.fast",   "--fast",              boolean,      False,   "files and synth: as fast as possible, not at their fps", "bool"),
    Option("capture.loop",   "--loop",              boolean,      False,   "files: start again at the end", "bool"),
    Option("capture.stall_timeout", "--stall-timeout", stall_timeout, 10.0,    "reopen a source after this many seconds without a frame"),
    Option("capture.password_dir", "--camera-password-dir", path, None, "network cameras: read camera NAME's password from DIR/camera-NAME-password (else $EDGE_HF_CAMERA_PASSWORD_NAME, else the systemd credential camera-NAME-password)", metavar="DIR"),
    Option("capture.open_timeout", "--open-timeout", open_timeout, 10.0,    "network cameras: seconds to wait for a connection"),
    Option("capture.decoder_threads", "--decoder-threads", decoder_threads, 1, "FFmpeg decoder threads per camera (0: one per core, per camera)"),
    Option("model.batch",    "--batch",             batch,        8,       "hyperframes of different cameras scored in one model call, at most"),
    Option("model.batch_wait", "--batch-wait",      batch_wait,   0.004,   "seconds a ready hyperframe may wait for other cameras' to join its call"),
    Option("motion.enabled", "--motion",            boolean,      False,   "skip the model on still windows (docs/runtime.md: motion gating)", "bool"),
    Option("motion.threshold", "--motion-threshold", share,       0.01,    "share of the picture that must change to count as motion"),
    Option("motion.max_skip", "--motion-max-skip",  max_skip,     2.0,     "seconds: on a still scene the model still runs this often"),
    Option("snapshots.enabled", "--snapshots",     boolean,      False,   "a JPEG of the frame at every alert's start, named in the event (docs/runtime.md: snapshots)", "bool"),
    Option("snapshots.dir",  "--snapshot-dir",      path,         None,    "where snapshots go (default: the state directory's snapshots/)"),
    Option("snapshots.max_count", "--snapshot-max-count", max_rows, 200,  "snapshots kept; the oldest go first"),
    Option("snapshots.max_bytes", "--snapshot-max-bytes", max_bytes, 64 * 1024 * 1024, "bytes of snapshots kept; the oldest go first"),
)
# fmt: on
OPTIONS: tuple[Option, ...] = CORE + tuple(o for sink in SINKS for o in sink.options)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per option; every default is None so that "not given" can be told apart."""
    for o in OPTIONS:
        if o.flag is None:
            continue
        hidden = o.default in (None, (), "", 0) or o.action == "bool"
        default = "" if hidden else f" (default {_show(o.default)})"
        kw: dict[str, Any] = {"dest": _dest(o), "default": None, "help": o.help + default}
        if o.action == "append":
            kw["action"] = "append"
        elif o.action == "bool":
            kw["action"] = argparse.BooleanOptionalAction
        if o.action != "bool":
            kw["metavar"] = (
                o.metavar or getattr(o.check, "metavar", None) or _METAVARS.get(o.check, "VALUE")
            )
        parser.add_argument(o.flag, **kw)


_METAVARS = {path: "PATH", text: "TEXT", names: "A,B,…"}


def _dest(o: Option) -> str:
    return o.key.replace(".", "_")


def _show(v: Any) -> str:
    if isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return f"{v[0]}/{v[1]}"
    return str(v)


# --------------------------------------------------------------------------- the file


def load_file(file: Path) -> dict[str, Any]:
    """Read a TOML config file into ``{"section.key": value}``; unknown keys are errors."""
    try:
        data = tomllib.loads(Path(file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"config file {file} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise UsageError(f"config file {file}: cannot read it ({reason})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"config file {file}: not valid TOML: {e}") from None
    known = {o.key for o in OPTIONS}
    sections = {k.split(".", 1)[0] for k in known if "." in k}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in known:
            out[key] = value
        elif key in sections and isinstance(value, dict):
            for sub, v in value.items():
                full = f"{key}.{sub}"
                if full not in known:
                    raise _unknown(file, full, [k for k in known if k.startswith(key + ".")])
                out[full] = v
        elif key in sections:
            raise UsageError(f"{file}: {key} must be a table: [{key}]")
        else:
            raise _unknown(file, key, sorted(known | sections))
    return out


def _unknown(file: Path, key: str, choices: list[str]) -> UsageError:
    close = difflib.get_close_matches(key, choices, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return UsageError(f"{file}: unknown key {key!r}{hint} (known: {', '.join(sorted(choices))})")


def resolve(
    args: argparse.Namespace, file: Path | None, need_cameras: bool = True
) -> dict[str, Any]:
    """``{"section.key": value}`` for every option: the flag, else the file, else the default."""
    values = load_file(file) if file is not None else {}
    out: dict[str, Any] = {}
    for o in OPTIONS:
        raw = getattr(args, _dest(o), None) if o.flag else None
        from_file = o.key in values
        v = o.check(values[o.key], f"{file}: {o.key}") if from_file else o.default
        if raw is not None:
            flag_value = o.check(raw, o.flag)
            # thresholds from flags refine the file's; every other flag replaces it
            v = (*v, *flag_value) if o.key in ("alerts.thresholds", "alerts.screen") else flag_value
        out[o.key] = v
    if "model.every" in values and "model.hz" in values:
        raise UsageError(f"{file}: model.every and model.hz are alternatives; keep one")
    if getattr(args, "model_every", None) is not None:
        out["model.hz"] = None  # --every on the command line beats hz = F in the file
    if out["alerts.screen"] and out["model.confirm"] is None:  # it would be silently unused
        raise UsageError(
            "--screen-threshold (alerts.screen) is set but there is no confirming model; add "
            "--confirm MODEL (model.confirm), or drop it"
        )
    if not out["cameras"] and need_cameras:
        raise UsageError(
            "no camera: give --camera [NAME=]SRC"
            + (f" or a [cameras] table in {file}" if file else " (or --config FILE)")
        )
    out["cameras.where"] = _camera_places(args, values.get("cameras"), file, len(out["cameras"]))
    from_flags = getattr(args, "cameras", None) is not None or "cameras" not in values
    out["cameras.own"] = () if from_flags else camera_tables(values["cameras"], f"{file}: cameras")
    return out


def _camera_places(args: argparse.Namespace, raw: Any, file: Path | None, n: int) -> tuple:
    """Where each camera came from, to name in its errors: the flag or the file's key."""
    if getattr(args, "cameras", None) is not None or raw is None:
        return ("--camera",) * n
    if isinstance(raw, dict):
        return tuple(f"{file}: cameras.{name}" for name in raw)
    return tuple(f"{file}: cameras[{i}]" for i in range(n))


# --------------------------------------------------------------------------- frozen settings


@dataclass(frozen=True)
class Settings:
    run: RunConfig
    sinks: tuple[tuple[str, Any], ...]  # (section name, its options) for each sink that is on
    log_level: str

    def sink(self, name: str) -> Any:
        """The options of sink ``name``, or None when it is off."""
        return dict(self.sinks).get(name)


def build(v: dict[str, Any]) -> Settings:
    """Typed, frozen settings from resolved values; sinks may read secrets (never shown)."""
    from edge_hf.backends import BackendOptions  # the runtime's imports (OpenCV, onnxruntime)
    from edge_hf.runtime import DEMO_MODEL, RunConfig  # are only paid for by commands that
    from edge_hf.sources import SourceOptions  # run something

    src = SourceOptions(
        fast=v["capture.fast"],
        loop=v["capture.loop"],
        open_timeout=v["capture.open_timeout"],
        read_timeout=v["capture.stall_timeout"],
        decoder_threads=v["capture.decoder_threads"],
    )
    where = v.get("cameras.where") or ("--camera",) * len(v["cameras"])
    run = RunConfig(
        cameras=v["cameras"],
        camera_where=where,
        camera_passwords=_camera_passwords(v["cameras"], where, v["capture.password_dir"]),
        model=v["model.path"] or DEMO_MODEL,
        backend=v["model.backend"],
        backend_opts=BackendOptions(threads=v["model.threads"], providers=v["model.providers"]),
        every=v["model.every"],
        hz=v["model.hz"],
        thresholds=v["alerts.thresholds"],
        k=v["alerts.k_of_n"][0],
        n=v["alerts.k_of_n"][1],
        cooldown=v["alerts.cooldown"],
        down_for=v["alerts.down_for"],
        realarm=v["alerts.re_alarm"],
        then=v["alerts.then"],
        source_opts=src,
        stall_timeout=v["capture.stall_timeout"],
        snapshots=_snapshots(v),
        camera_settings=_camera_settings(v.get("cameras.own", ())),
        motion=_motion(v),
        batch=v["model.batch"],
        batch_wait=v["model.batch_wait"],
        confirm=v["model.confirm"],
        screen_thresholds=v["alerts.screen"],
    )
    sinks = tuple((s.name, opts) for s in SINKS if (opts := s.settings(v)) is not None)
    return Settings(run, sinks, v["log_level"])


def _camera_passwords(
    cams: tuple[str, ...], where: tuple[str, ...], password_dir: Path | None
) -> tuple[str | None, ...]:
    from edge_hf.sources import split_name

    out = []
    for arg, place in zip(cams, where, strict=True):
        name, src = split_name(arg)
        out.append(camera_password(name, src, place, password_dir))
        if place == "--camera" and password_on_command_line(src):
            log.warning(
                "--camera %s: a password on the command line can be read by every user of this "
                "machine (ps); put it in $%s or a credential file instead (docs/runtime.md: camera passwords)",
                mask_url(src),
                env_name(name),
            )
    return tuple(out)


def _camera_settings(tables: tuple[dict[str, Any], ...]) -> tuple:
    from edge_hf.camera import CameraSettings

    if not any(tables):
        return ()
    return tuple(CameraSettings(**own) for own in tables)


def _motion(v: dict[str, Any]):
    from edge_hf.motion import MotionOptions

    return MotionOptions(v["motion.enabled"], v["motion.threshold"], v["motion.max_skip"])


def _snapshots(v: dict[str, Any]):
    from edge_hf.sinks.mqtt.options import default_state_dir
    from edge_hf.snapshots import SnapshotOptions

    if not v["snapshots.enabled"]:
        return None
    directory = v["snapshots.dir"] or (v["spool.dir"] or default_state_dir()) / "snapshots"
    return SnapshotOptions(directory, v["snapshots.max_count"], v["snapshots.max_bytes"])
