"""The ``edge-hf`` command. Our errors become one line on stderr and a documented exit code:

0 ok (end of a file, or stopped by SIGINT/SIGTERM) · 1 a bug (traceback) · 2 bad usage or
config · 3 model file · 4 camera/source · 5 alert sink.
"""

from __future__ import annotations

import argparse
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

from edge_hf.errors import EdgeHFError, UsageError  # noqa: E402

log = logging.getLogger("edge_hf")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + error
        command = self.prog.removeprefix("edge-hf").strip()  # "run", "info" or ""
        raise UsageError(f"{command + ': ' if command else ''}{message} (see --help)")


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, found {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, found {text!r}")
    return v


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, found {text!r}")
    return v


def _threshold(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        v = float(value)
    except ValueError:
        v = -1.0
    if not sep or not name or not 0 < v <= 1:
        raise argparse.ArgumentTypeError(
            f"expected CLASS=P with 0 < P <= 1 (e.g. fall=0.8), found {text!r}"
        )
    return name, v


def _k_of_n(text: str) -> tuple[int, int]:
    k, sep, n = text.partition("/")
    if sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n):
        return int(k), int(n)
    raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N (e.g. 2/3), found {text!r}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="edge-hf", description="Hyperframe video alerts on cheap hardware.")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="watch cameras and print alerts")
    run.add_argument(
        "--camera",
        action="append",
        required=True,
        metavar="[NAME=]SRC",
        help="/dev/videoN, an index, rtsp://…, http://…, a video file or synth://NAME; repeatable",
    )
    run.add_argument(
        "--model",
        type=Path,
        help="a .onnx or OpenVINO .xml with an edge-hf spec (default: the embedded demo model)",
    )
    run.add_argument(
        "--backend", default="auto", help="auto (by file type), onnxruntime or openvino"
    )
    run.add_argument(
        "--providers", default="", help="onnxruntime providers in order, e.g. tensorrt,cuda,cpu"
    )
    run.add_argument(
        "--threads",
        type=_positive_int,
        help="inference threads (default: 1 for onnxruntime, leaving cores to decode video; OpenVINO chooses)",
    )
    hop = run.add_mutually_exclusive_group()
    hop.add_argument(
        "--every",
        type=_positive_int,
        default=1,
        help="run the model every N source frames (default 1)",
    )
    hop.add_argument("--hz", type=float, help="run the model about this many times per second")
    run.add_argument(
        "--threshold",
        type=_threshold,
        action="append",
        default=[],
        metavar="CLASS=P",
        help="alert threshold for a class (default: the model's); repeatable",
    )
    run.add_argument(
        "--k-of-n",
        type=_k_of_n,
        default=(2, 3),
        metavar="K/N",
        help="start an alert when K of the last N scores pass (default 2/3)",
    )
    run.add_argument(
        "--cooldown",
        type=_seconds,
        default=10.0,
        help="seconds of quiet after an alert ends (default 10)",
    )
    run.add_argument(
        "--fast", action="store_true", help="files and synth: as fast as possible, not at their fps"
    )
    run.add_argument("--loop", action="store_true", help="files: start again at the end")
    run.add_argument(
        "--stall-timeout",
        type=_seconds,
        default=10.0,
        help="reopen a source after this many seconds without a frame (default 10)",
    )
    run.add_argument(
        "--open-timeout",
        type=_seconds,
        default=10.0,
        help="network cameras: seconds to wait for a connection (default 10)",
    )
    run.set_defaults(func=cmd_run)

    info = sub.add_parser("info", help="print a model's spec, inputs and outputs")
    info.add_argument("model", type=Path)
    info.add_argument("--backend", default="auto")
    info.set_defaults(func=cmd_info)
    return p


def cmd_run(args: argparse.Namespace) -> int:
    from edge_hf.backends import BackendOptions
    from edge_hf.runtime import DEMO_MODEL, RunConfig, Runtime
    from edge_hf.sinks import StdoutSink
    from edge_hf.sources import SourceOptions

    if args.hz is not None and not args.hz > 0:
        raise UsageError(f"--hz must be > 0, found {args.hz}")
    cfg = RunConfig(
        cameras=tuple(args.camera),
        model=args.model or DEMO_MODEL,
        backend=args.backend,
        backend_opts=BackendOptions(
            threads=args.threads or 0,
            providers=tuple(p for p in args.providers.split(",") if p),
        ),
        every=args.every,
        hz=args.hz,
        thresholds=tuple(args.threshold),
        k=args.k_of_n[0],
        n=args.k_of_n[1],
        cooldown=args.cooldown,
        source_opts=SourceOptions(
            fast=args.fast,
            loop=args.loop,
            open_timeout=args.open_timeout,
            read_timeout=args.stall_timeout,
        ),
        stall_timeout=args.stall_timeout,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    runtime = Runtime(cfg, [StdoutSink()], stop)
    return runtime.run()


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


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        logging.basicConfig(
            level=args.log_level.upper(),
            stream=sys.stderr,
            format="edge-hf: %(levelname)s %(message)s",
        )
        return args.func(args)
    except EdgeHFError as e:
        print(f"edge-hf: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
