"""The ``edge-hf`` command: ``run``, ``check-config``, ``info``, and the commands sinks bring
(``mqtt-cleanup``; ``edge_hf.sinks.base.Command``). Our errors become one line on
stderr and a documented exit code:

0 ok (end of a file, or stopped by SIGINT/SIGTERM) · 1 a bug (traceback) · 2 bad usage or
config · 3 model file · 4 camera/source · 5 alert sink.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

# OpenCV prints its own multi-line warnings for every failed open; ours say it in one line.
os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")

from edge_hf.errors import EdgeHFError, SourceError, UsageError  # noqa: E402

log = logging.getLogger("edge_hf")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + error
        command = self.prog.removeprefix("edge-hf").strip()  # "run", "info" or ""
        raise UsageError(f"{command + ': ' if command else ''}{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    from edge_hf import __version__, config

    p = _Parser(prog="edge-hf", description="Hyperframe video alerts on cheap hardware.")
    p.add_argument("--version", action="version", version=f"edge-hf {__version__}")
    _log_level_flag(p, None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="watch cameras and print alerts",
        description="Flags override the config file, which overrides the defaults.",
    )
    run.add_argument("--config", type=Path, metavar="FILE", help="a TOML config file")
    config.add_flags(run)
    _log_level_flag(run, argparse.SUPPRESS)
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check-config", help="check a config file and print what it means")
    check.add_argument("file", type=Path)
    _log_level_flag(check, argparse.SUPPRESS)
    check.set_defaults(func=cmd_check_config)

    from edge_hf.sinks import SINKS

    for section in SINKS:
        for command in section.commands:
            c = sub.add_parser(command.name, help=command.help, description=command.help)
            c.add_argument("--config", type=Path, metavar="FILE", help="a TOML config file")
            config.add_flags(c)
            _log_level_flag(c, argparse.SUPPRESS)
            c.set_defaults(func=_sink_command(section, command))

    info = sub.add_parser("info", help="print a model's spec, inputs and outputs")
    info.add_argument("model", type=Path)
    info.add_argument("--backend", default="auto")
    _log_level_flag(info, argparse.SUPPRESS)
    info.set_defaults(func=cmd_info)
    return p


def _log_level_flag(parser: argparse.ArgumentParser, default: object) -> None:
    """Accepted before and after the command; a subcommand's default must not erase the
    value given before it, hence SUPPRESS there."""
    parser.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        default=default,
        help="default info, or log_level in the config file",
    )


def _settings(args: argparse.Namespace, file: Path | None):
    from edge_hf import config

    if getattr(args, "model_every", None) is not None and args.model_hz is not None:
        raise UsageError("run: --every and --hz are alternatives; give one (see --help)")
    values = config.resolve(args, file)
    if args.log_level is None:
        logging.getLogger().setLevel(values["log_level"].upper())
    return config.build(values)


def cmd_run(args: argparse.Namespace) -> int:
    from edge_hf.notify import Notifier
    from edge_hf.runtime import Runtime
    from edge_hf.sinks import SINKS, Sink

    settings = _settings(args, args.config)
    sections = {s.name: s for s in SINKS}
    sinks: list[Sink] = [sections[name].create(opts) for name, opts in settings.sinks]
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    runtime = Runtime(settings.run, sinks, stop, notify=Notifier.from_env())
    code = runtime.run()
    if runtime.abandoned:  # capture threads still inside OpenCV: see join_captures
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the process without the interpreter's shutdown, which OpenCV turns into an abort
    while a capture thread blocks in a read. Everything that matters is done by now: events
    out, sinks closed, the summary logged; only what is buffered needs flushing."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _sink_command(section, command):
    """``edge-hf NAME``: the run's flags and config file (cameras optional) -> the sink's
    options -> ``command.run``."""

    def run(args: argparse.Namespace) -> int:
        from edge_hf import config

        values = config.resolve(args, args.config, need_cameras=False)
        if args.log_level is None:
            logging.getLogger().setLevel(values["log_level"].upper())
        return command.run(section.settings(values))

    return run


def cmd_check_config(args: argparse.Namespace) -> int:
    """Everything ``run --config FILE`` would check before its first frame, and refuse what
    it would refuse, without a live camera being opened or a broker contacted (a camera device
    missing now is only a warning: whether it is plugged in is not the file's fault); prints
    the resolved settings (no password)."""
    from edge_hf.backends import load_backend
    from edge_hf.runtime import alert_policy, camera_args
    from edge_hf.sinks import SINKS
    from edge_hf.snapshots import check_directory
    from edge_hf.twostage import check_confirm

    settings = _settings(args, args.file)
    cfg = settings.run
    for cam, where, password in camera_args(cfg):
        _check_camera(cam, cfg.source_opts, where, password)
    backend = load_backend(cfg.model, cfg.backend, cfg.backend_opts)
    alert_policy(backend.spec, cfg)
    for own, where in zip(cfg.camera_settings, cfg.camera_where, strict=False):
        alert_policy(backend.spec, cfg, own, where)
    if cfg.confirm is not None:  # two-stage mode: the confirming model fits the screening one
        check_confirm(backend.spec, load_backend(cfg.confirm, "auto", cfg.backend_opts), cfg)
    if cfg.snapshots is not None:
        check_directory(cfg.snapshots.directory)
    sections = {s.name: s for s in SINKS}
    for name, opts in settings.sinks:
        sections[name].check(opts)
    print(json.dumps(_describe(settings), indent=2, default=str))
    print(f"edge-hf: {args.file}: ok", file=sys.stderr)
    return 0


def _check_camera(cam: str, opts, where: str, password: str | None) -> None:
    """What ``run`` refuses of one camera before its first frame: its scheme, name and file,
    and a file or finite source it cannot open (opened and released here, as ``run`` does);
    a live camera is not opened, and a device missing now is a warning."""
    from edge_hf.sources import is_device, open_source

    try:
        source = open_source(cam, opts, where, password)
    except SourceError as e:
        if not is_device(cam):
            raise
        log.warning("%s", e)
        return
    if source.live:
        return
    try:
        source.open()
    finally:
        source.release()


def _describe(settings) -> dict:
    from dataclasses import asdict

    from edge_hf.redact import mask_url
    from edge_hf.sinks import SINKS

    out = {"log_level": settings.log_level, "run": asdict(settings.run)}
    out["run"]["cameras"] = [mask_url(c) for c in settings.run.cameras]
    out["run"]["camera_passwords"] = ["set" if p else None for p in settings.run.camera_passwords]
    sections = {s.name: s for s in SINKS}
    for name, opts in settings.sinks:
        shown = sections[name].describe(opts)
        if shown is not None:
            out[name] = shown
    return out


def cmd_info(args: argparse.Namespace) -> int:
    from edge_hf.backends import load_backend

    backend = load_backend(args.model, args.backend)
    print(
        json.dumps(
            {"model": str(args.model), "spec": backend.spec.to_dict(), **backend.describe()},
            indent=2,
        )
    )
    return 0


def _ours_or_a_warning(record: logging.LogRecord) -> bool:
    """Other libraries' info lines are not ours to print (OpenVINO's telemetry logs "Failed to
    find location of the openvino_telemetry file" on the root logger for a user without a
    home directory, as under systemd)."""
    return record.levelno >= logging.WARNING or record.name.startswith("edge_hf")


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        logging.basicConfig(
            level=(args.log_level or "info").upper(),
            stream=sys.stderr,
            format="edge-hf: %(levelname)s %(message)s",
        )
        for handler in logging.getLogger().handlers:
            handler.addFilter(_ours_or_a_warning)
        return args.func(args)
    except EdgeHFError as e:
        print(f"edge-hf: error: {e}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:  # `edge-hf info m.onnx | head`: the reader has gone, as it may
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
