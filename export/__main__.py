"""Export a trained checkpoint for the device runtime, check it and measure it.

    python -m export runs/NAME/best.pt --formats onnx,openvino,openvino-int8 \\
        [--calib DATASET] [--out DIR] [--force] [--fp16] [--max-drop X] [--threshold CLASS=P]
        [--subset-size N] [--keep-float GROUPS] [--held-out DATASET] [--tune DATASET]

Writes DIR (default: ``export/`` beside the checkpoint) with the model files, ``report.json``
and ``MODEL_CARD.md``, all or nothing. Errors are one line on stderr with an exit code:

0 ok · 1 a bug (traceback) · 2 bad usage · 3 checkpoint (missing, not ours, no spec) ·
4 calibration data (missing, empty, other classes) · 5 output folder not empty (use --force) ·
6 parity: an exported model disagrees with the trained one · 130 interrupted (nothing written)
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path

from edge_hf.config import then_rules
from edge_hf.errors import UsageError
from export.formats import FORMATS, check_options, parse_formats
from models.cli import Parser, command, threshold_arg
from models.errors import BadArguments

PROG = "python -m export"


def _keep_float(text: str | None) -> tuple[str, ...]:
    from export.quantize import DEFAULT_KEEP_FLOAT

    if text is None:
        return DEFAULT_KEEP_FLOAT
    if text.strip() == "none":
        return ()
    return tuple(g.strip() for g in text.split(",") if g.strip())


def build_parser() -> argparse.ArgumentParser:
    table = "; ".join(f"{f.name}: {f.about}" for f in FORMATS)
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", type=Path, help="runs/NAME/best.pt from python -m models.train")
    p.add_argument(
        "--formats", default="onnx,openvino,openvino-int8", help=f"default: all. {table}"
    )
    p.add_argument("--out", type=Path, help="output folder (default: export/ beside CHECKPOINT)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.add_argument(
        "--calib",
        type=Path,
        help="dataset for INT8 calibration (training split) and the report (test split); "
        "default: the one the checkpoint was trained on",
    )
    p.add_argument("--fp16", action="store_true", help="openvino: store FP16 weights")
    p.add_argument("--max-drop", type=float, help="openvino-int8: accuracy control, e.g. 0.01")
    p.add_argument("--subset-size", type=int, help="openvino-int8: calibration hyperframes (1000)")
    p.add_argument(
        "--keep-float",
        help="openvino-int8: leave layer groups in float, comma-separated from stem, se, head; "
        "none: quantize every layer (default: se,head)",
    )
    p.add_argument(
        "--threshold",
        type=threshold_arg,
        action="append",
        default=[],
        metavar="CLASS=P",
        help="set a default alert threshold in the exported spec; repeatable",
    )
    p.add_argument(
        "--then",
        action="append",
        metavar="CLASS=POSE",
        help="an alert class waits for a pose after it, written into the spec: "
        "CLASS=POSE[:P[:SECONDS]], or none (default: a model with a lying class alerts on "
        "fall once lying follows, at a score (0.2 to 0.5) and within seconds (0.4 to 1) chosen "
        "for the model on its validation videos; docs/export.md)",
    )
    p.add_argument("--repeats", type=int, default=100, help="timed runs per latency figure")
    p.add_argument(
        "--held-out",
        type=Path,
        metavar="DATASET",
        help="also measure every file on every video of DATASET, a dataset of the same classes "
        "the model never saw (python -m export.heldout; docs/evaluation.md); refused if it holds any of the training videos",
    )
    p.add_argument(
        "--tune",
        type=Path,
        metavar="DATASET",
        help="choose INT8 (its activation ranges, --max-drop) and the wait for lying on every video of "
        "DATASET, videos of the model's classes it never trained on, instead of the trainer's "
        "validation split (docs/export.md); refused if it holds training "
        "videos or --held-out ones",
    )
    return p


def _then(items: list[str] | None):
    """``--then`` as the runtime reads it; None: auto (export.alert_spec.with_then)."""
    try:
        return None if items is None else then_rules(items, "--then")
    except UsageError as e:  # the device's: then_rules is edge-hf run's own check
        raise BadArguments(str(e)) from None


def options(argv: list[str]):
    from export.pipeline import ExportOptions
    from export.quantize import QuantOptions

    args = build_parser().parse_args(argv)
    formats = parse_formats(args.formats)
    given = {
        "--fp16": args.fp16,
        "--max-drop": args.max_drop is not None,
        "--subset-size": args.subset_size is not None,
        "--keep-float": args.keep_float is not None,
    }
    check_options(formats, given)
    if args.repeats < 1:
        raise BadArguments(f"--repeats: expected >= 1, found {args.repeats}")
    quant = QuantOptions(
        subset_size=args.subset_size or QuantOptions.subset_size,
        max_drop=args.max_drop,
        keep_float=_keep_float(args.keep_float),
    )
    return ExportOptions(
        checkpoint=args.checkpoint,
        formats=formats,
        out=args.out or args.checkpoint.parent / "export",
        calib=args.calib,
        force=args.force,
        fp16=args.fp16,
        quant=quant,
        thresholds=tuple(args.threshold),
        then=_then(args.then),
        repeats=args.repeats,
        held_out=args.held_out,
        tune=args.tune,
        command=shlex.join([*PROG.split(), *argv]),
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="export: %(levelname)s %(message)s")
    # NNCF imports torch's C++ extension helper, which warns that this CPU box has no CUDA
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
    return command("export", lambda: _export(argv))


def _export(argv: list[str]) -> str:
    opts = options(argv)
    from export.pipeline import run

    return summary(run(opts), opts.out)


def summary(report: dict, out: Path) -> str:
    from export.card import metrics_table
    from models.evaluation.clips import lines

    on_clips = lines((report.get("clips") or {}).get("classes"))
    return "\n".join([f"wrote {out}", *metrics_table(report)[2:], *on_clips, *held_out(report)])


def held_out(report: dict) -> list[str]:
    """The files on a dataset the model never saw (--held-out), if measured."""
    from export.heldout import lines

    return ["", *lines(report["held_out"])] if report.get("held_out") else []


if __name__ == "__main__":
    sys.exit(main())
