"""Event-level evaluation: what a person woken by the alerts counts.

    python -m models.evaluate MODEL STREAMS [STREAMS ...] [--threshold CLASS=P] [--k-of-n K/N]
                              [--cooldown S] [--max-delay 1.0] [--target 0.5] [--every N]
                              [--out DIR] [--confirm MODEL2 [--screen-threshold CLASS=P]]
                              [--by COLUMN] [--choose-on STREAMS]

MODEL is any exported file (``.onnx``, ``.xml``) or a training checkpoint (``.pt``, exported to
ONNX on the fly: needs torch). STREAMS is a folder of long videos with frame-level labels
(``segments.csv``, the trainer's layout); several folders are one set (streams named
FOLDER/VIDEO: one operating point for all). Each stream goes through the runtime itself, as a file
camera processed as fast as possible: its sampler, backend and activation, unchanged. The score of
every hyperframe is recorded on the way to the alert logic, and the runtime's own ``AlertLogic``
then replays those scores for each operating point of a sweep (thresholds x k-of-n).

For each alert class of the model, an *event* is a run of frames labelled with the class; its
last frame is the *impact*. An alert start counts for an event when it comes between the event's
first frame and ``--match`` seconds after the impact (one alert per event); its *delay* is from
the impact. Every other alert start is a false alarm, counted by the label of the frame it
started on (what the stream showed: a lie-down, a sit-down ...). Reported per class: events caught (and
caught within ``--max-delay``), missed, false alarms per hour of video, delay median and p95; and
the operating point recommended at the runtime's k-of-n: the most events caught within
``--max-delay`` at no more than ``--target`` false alarms per hour (ties: fewer false alarms,
then the higher threshold); for a class that waits for a pose, at any wait
``models.evaluation.wait`` could choose (the pose's threshold x seconds: every sweep row names
its ``wait``). With ``--choose-on`` some of the folders, it is chosen and counted on those, and
counted again on the others (``held_out``): what it does on cameras it was not chosen on.
For a class that waits for a pose (a fall for lying), each point also counts its *down level*
(``down``; ``--down-for`` seconds, the runtime's 10 by default): of the events whose person
stayed down that long (the frames after the impact labelled with the class or the pose), how
many it alerted within ``--down-for`` + ``--max-delay`` seconds of the impact and how late; how
often it was raised for a person who got up sooner; and its false alarms per hour.
``OUT/eval.json`` has everything, including at both points each event's delay or why it was
missed and where each false alarm started (``outcomes``: to look them up in the videos), and for
a class that waits for a pose, how often the frames labelled with that pose are called it, over
all streams and per stream (``pose_seen``: the cameras where the model does not see it);
``OUT/sweep.png`` draws false alarms per hour against recall. ``--by COLUMN`` breaks both points
down by a fact about each video from ``STREAMS/videos.csv`` (``video,COLUMN``: a camera, a
distance; the synthetic streams have ``figure``, far or near, and ``contrast``, low or high).
``python -m export ... --threshold CLASS=P [--then CLASS=POSE:P:S]`` writes a threshold (and a
wait) into the spec.

With ``--confirm MODEL2`` the runtime runs in two-stage mode (edge_hf.twostage): MODEL screens
every hop and MODEL2 confirms; the recorded scores are what reaches the alert logic (MODEL2's
where it confirmed), and ``cost`` in the report says how often each stage ran and the model time
per source frame, to compare with MODEL alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

from edge_hf.alerts import DEFAULT_COOLDOWN, DEFAULT_DOWN_FOR, AlertPolicy
from edge_hf.config import then_rules
from edge_hf.errors import EdgeHFError
from models.cli import threshold_arg
from models.data import read_segments
from models.errors import WorkstationError
from models.evaluation import phases
from models.evaluation.events import (
    GRID,
    KN,
    Options,
    Stream,
    by_fact,
    down_point,
    misses,
    outcomes,
    peaks,
    point,
    recommend,
    sweep,
    with_wait,
)
from models.evaluation.streams import load_streams, stream_facts
from models.evaluation.wait import other_waits

log = logging.getLogger("models")


def cost(streams: list[Stream]) -> dict:
    """Model time per source frame (both stages), and how often the two stages ran."""
    frames = sum(s.length for s in streams)
    out = {
        "model_ms_per_frame": 1000.0 * sum(s.model_s for s in streams) / max(1, frames),
        "hyperframes": int(sum(len(s.anchors) for s in streams)),
    }
    if any(s.stages for s in streams):
        out["two_stage"] = {
            k: sum(dict(s.stages)[k] for s in streams) for k, _ in streams[0].stages
        }
    return out


def evaluate(
    model: Path,
    roots: tuple[Path, ...],
    opts: Options,
    by: tuple[str, ...] = (),
    choose_on: tuple[Path, ...] = (),
) -> dict:
    """The report (module docstring) over the streams of every folder of ``roots`` as one set
    (named ROOT/VIDEO when there are several); ``by``: columns of each ``videos.csv`` to break
    each point's counts down by; ``choose_on``: folders of ``roots`` the recommended point is
    chosen on (the others: where it is counted again, ``held_out``)."""
    rows = {r: read_segments(r / "segments.csv") for r in roots}  # all, before any is scored
    prefix = {r: f"{r}/" if len(roots) > 1 else "" for r in roots}
    known = {
        prefix[r] + v: f
        for r in roots
        for v, f in stream_facts(r, by, {v for v, *_ in rows[r]}).items()
    }
    streams: list[Stream] = []
    for r in roots:
        more, classes, (thresholds, then) = load_streams(model, r, rows[r], opts, prefix[r])
        streams += more
    opts = replace(opts, then=then)
    hours = sum(s.length / s.fps for s in streams) / 3600.0
    shown = {**opts.__dict__, "confirm": str(opts.confirm), "then": [asdict(t) for t in then]}
    report = {
        "model": str(model),
        "streams": [str(r) for r in roots],
        "videos": len(streams),
        "hours": hours,
        "options": shown,
        "cost": cost(streams),
        "classes": {},
    }
    held = None
    if choose_on:
        mine = tuple(prefix[r] for r in choose_on)
        held = (
            [s for s in streams if s.name.startswith(mine)],
            [s for s in streams if not s.name.startswith(mine)],
        )
        report["choose_on"] = [str(r) for r in choose_on]
    for cls, thr in thresholds.items():
        report["classes"][cls] = _class_report(
            streams, classes.index(cls), cls, thr, opts, (known, by), held
        )
    return report


def _class_report(streams, column: int, cls: str, thr: float, opts: Options, facts, held) -> dict:
    """One alert class's operating and recommended points, sweep and events. ``facts``: (video ->
    its facts, the columns to break the points down by); ``held``: None, or (the streams the
    recommended point is chosen on, the others: it is counted on those too, as ``held_out``)."""
    kn = (opts.k, opts.n)
    kns = KN if kn in KN else (*KN, kn)
    rows = [r for k in kns for r in sweep(streams, column, cls, GRID, k, opts)]
    waits = other_waits(streams, column, cls, GRID, opts)
    if held is None:  # chosen where counted: the runtime's k-of-n rows of the sweep
        pick, mine = streams, [r for r in rows if (r["k"], r["n"]) == kn] + waits
    else:
        pick = held[0]
        mine = sweep(pick, column, cls, GRID, kn, opts) + other_waits(pick, column, cls, GRID, opts)
    chosen = {
        "operating": (streams, point(streams, column, cls, thr, kn, opts)),
        "recommended": (pick, recommend(mine, opts.target)),
    }
    known, by = facts
    for where, r in chosen.values():
        at = with_wait(opts, cls, r["wait"])
        outcome = outcomes(where, column, cls, r["threshold"], (r["k"], r["n"]), at)
        r["missed_because"], r["outcomes"] = misses(outcome), outcome
        r["by"] = {c: by_fact(outcome, where, {v: f[c] for v, f in known.items()}) for c in by}
        r["down"] = down_point(where, column, cls, r["threshold"], (r["k"], r["n"]), at)
    rec = chosen["recommended"][1]
    if held is not None:
        at = with_wait(opts, cls, rec["wait"])
        rec["held_out"] = point(held[1], column, cls, rec["threshold"], (rec["k"], rec["n"]), at)
        rec["held_out"]["down"] = down_point(
            held[1], column, cls, rec["threshold"], (rec["k"], rec["n"]), at
        )
    wait = opts.then_of(cls)
    return {
        "operating": chosen["operating"][1],
        "recommended": rec,
        "sweep": rows + waits,
        "events": peaks(streams, column, cls, opts.max_delay),
        "pose_seen": phases.seen(streams, wait.pose) if wait else None,
    }


def _model_file(model: Path, tmp: Path) -> Path:
    """An exported file as is; a checkpoint exported to ONNX (torch needed)."""
    if model.suffix != ".pt":
        return model
    from models.checkpoint import load_checkpoint
    from models.to_onnx import export_onnx

    ckpt = load_checkpoint(model)
    export_onnx(ckpt.net, ckpt.spec, tmp / "model.onnx")
    return tmp / "model.onnx"


def _kn(text: str) -> tuple[int, int]:
    try:
        k, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K/N such as 2/3, found {text!r}") from None
    return k, n


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, Options]:
    ap = argparse.ArgumentParser(
        prog="python -m models.evaluate", description=__doc__.split("\n")[0]
    )
    ap.add_argument("model", type=Path, help="an exported .onnx/.xml file or a best.pt checkpoint")
    ap.add_argument(
        "streams",
        type=Path,
        nargs="+",
        help="folders with videos and segments.csv, evaluated as one set",
    )
    ap.add_argument(
        "--threshold",
        type=threshold_arg,
        action="append",
        default=[],
        metavar="CLASS=P",
        help="alert threshold (default: the model's spec)",
    )
    ap.add_argument(
        "--k-of-n",
        type=_kn,
        default=(2, 3),
        metavar="K/N",
        help="alert when K of the last N scores pass (default: 2/3, the runtime's)",
    )
    ap.add_argument(
        "--cooldown",
        type=float,
        default=DEFAULT_COOLDOWN,
        help="seconds of quiet after an alert ends (default: %(default)s, the runtime's)",
    )
    ap.add_argument(
        "--then",
        action="append",
        metavar="CLASS=POSE",
        help="an alert class waits for a pose after it: CLASS=POSE[:P[:SECONDS]], or none "
        "(default: the model's, as edge-hf run)",
    )
    ap.add_argument(
        "--down-for",
        type=float,
        default=DEFAULT_DOWN_FOR,
        help="seconds down before the down level of a class that waits for a pose (default: "
        "%(default)s, the runtime's; 0: none)",
    )
    ap.add_argument(
        "--max-delay",
        type=float,
        default=1.0,
        help="seconds after the impact within which an alert is in time (default: 1)",
    )
    ap.add_argument(
        "--match",
        type=float,
        default=5.0,
        help="seconds after the impact after which a start is a false alarm (default: 5)",
    )
    ap.add_argument(
        "--target",
        type=float,
        default=0.5,
        help="false alarms per hour the recommended point may cost (default: 0.5)",
    )
    ap.add_argument(
        "--confirm",
        type=Path,
        metavar="MODEL2",
        help="two-stage mode: MODEL screens, MODEL2 (.onnx/.xml/best.pt) confirms",
    )
    ap.add_argument(
        "--screen-threshold",
        type=threshold_arg,
        action="append",
        default=[],
        metavar="CLASS=P",
        help="two-stage mode: MODEL's score that sends a hyperframe to MODEL2 (default 0.5)",
    )
    ap.add_argument(
        "--every", type=int, default=1, help="run the model every N frames (default: 1)"
    )
    ap.add_argument(
        "--by",
        action="append",
        default=[],
        metavar="COLUMN",
        help="break the counts down by a column of STREAMS/videos.csv (video,COLUMN,...: a fact "
        "about each video, such as camera or distance); repeatable",
    )
    ap.add_argument(
        "--choose-on",
        type=Path,
        action="append",
        default=[],
        metavar="STREAMS",
        help="choose the recommended point on these of the STREAMS folders only, and count it on "
        "the others as well (held_out): what it does on cameras it was not chosen on; repeatable",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("runs/eval"),
        help="folder for eval.json and sweep.png (default: runs/eval)",
    )
    args = ap.parse_args(argv)
    twice = [
        d
        for i, d in enumerate(args.streams)
        if d.resolve() in {e.resolve() for e in args.streams[:i]}
    ]
    if twice:
        ap.error(f"streams folder {twice[0]} is given twice")
    given = {d.resolve(): d for d in args.streams}
    if stray := [d for d in args.choose_on if d.resolve() not in given]:
        ap.error(f"--choose-on {stray[0]}: expected one of the STREAMS folders, found another")
    args.choose_on = tuple(dict.fromkeys(given[d.resolve()] for d in args.choose_on))
    if args.choose_on and len(args.choose_on) == len(given):
        ap.error(
            "--choose-on: expected some STREAMS folders left to count the point on, found none"
        )
    opts = Options(
        tuple(args.threshold),
        *args.k_of_n,
        args.cooldown,
        args.max_delay,
        args.match,
        args.target,
        args.every,
        args.confirm,
        tuple(args.screen_threshold),
        None if args.then is None else then_rules(args.then, "--then"),
        args.down_for,
    )
    # the runtime's own checks
    AlertPolicy((("x", 0.5),), opts.k, opts.n, opts.cooldown, down_for=opts.down_for)
    return args, opts


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("edge_hf").setLevel(logging.WARNING)
    try:
        args, opts = parse(argv)
        with tempfile.TemporaryDirectory() as tmp:
            if opts.confirm is not None:
                (Path(tmp) / "confirm").mkdir()
                opts = replace(opts, confirm=_model_file(opts.confirm, Path(tmp) / "confirm"))
            report = evaluate(
                _model_file(args.model, Path(tmp)),
                tuple(args.streams),
                opts,
                tuple(args.by),
                args.choose_on,
            )
    except (WorkstationError, EdgeHFError) as e:
        print(f"models.evaluate: error: {e}", file=sys.stderr)
        return e.exit_code if isinstance(e, EdgeHFError) else 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "eval.json").write_text(json.dumps(report, indent=1))
    from models.evaluation.report import plot_sweep, summary

    plot_sweep(report, opts, args.out / "sweep.png")
    print(summary(report))
    print(f"wrote {args.out / 'eval.json'} and {args.out / 'sweep.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
