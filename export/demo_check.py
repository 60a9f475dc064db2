"""Does a model alert on the synthetic falls, and only there? ``edge-hf``'s own runtime on
``synth://demo`` stories (several seeds), its alert starts matched against the story's labels.

    python -m export.demo_check [MODEL] [--seeds 8] [--frames 1806] [--cooldown 1] [--threshold fall=P]
        [--preset easy|real]

MODEL defaults to the embedded demo model; ``--preset real`` draws the stories on the realistic
scenes as ``synth://demo?preset=real`` does (procedural backgrounds: the device has no
photographs). A start counts as a hit when it falls within a fall segment or the 6 frames after
it (the model sees a fall once it has happened); any other start is a false alert, reported with
the story label it fell on. The cooldown defaults to 1 s so that each fall can be seen (the
runtime's own default, 5 s, merges falls that come closer together).
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from edge_hf import synth
from edge_hf.alerts import FAST, Event
from edge_hf.errors import EdgeHFError
from edge_hf.runtime import DEMO_MODEL, RunConfig, Runtime
from edge_hf.sources import SourceOptions
from models.cli import threshold_arg
from models.evaluation.events import runs

LATE = 6  # frames after a fall segment in which a start still counts as that fall's


class _Starts:
    """A sink that keeps the frame of every start event."""

    def __init__(self) -> None:
        self.frames: list[int] = []

    def start(self, run) -> None:
        pass

    def emit(self, event: Event) -> None:
        if event.kind == "start" and event.level == FAST:
            self.frames.append(event.frame)

    def close(self) -> None:
        pass


@dataclass
class Tally:
    falls: int = 0
    hits: int = 0
    false: list[tuple[int, int, str]] = field(default_factory=list)  # (seed, frame, label)


def check(
    model: Path, seeds: int, frames: int, cooldown: float, thresholds, preset: str = "easy"
) -> Tally:
    tally = Tally()
    for seed in range(seeds):
        url = f"synth://demo?frames={frames}&seed={seed}&preset={preset}"
        sink = _Starts()
        cfg = RunConfig(
            cameras=(url,),
            model=model,
            thresholds=tuple(thresholds),
            cooldown=cooldown,
            source_opts=SourceOptions(fast=True),
        )
        run = Runtime(cfg, [sink], threading.Event())
        run.run()
        for cam in run.cameras:
            if cam.capture.error:  # a story cut short would count its missing falls as missed
                raise cam.capture.error
        scene = synth.make_scene("demo", seed=seed, size=(360, 640), preset=preset)
        labels = [scene.label_at(i) for i in range(frames)]
        falls = [(a, b) for a, b, lab in runs(labels) if lab == "fall" and b + LATE < frames]
        tally.falls += len(falls)
        tally.hits += sum(any(a <= f <= b + LATE for f in sink.frames) for a, b in falls)
        tally.false += [
            (seed, f, labels[f])
            for f in sink.frames
            if not any(a <= f <= b + LATE for a, b in falls)
        ]
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m export.demo_check", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "model",
        type=Path,
        nargs="?",
        default=DEMO_MODEL,
        help="exported model (.onnx or .xml; default: the embedded demo model)",
    )
    ap.add_argument("--seeds", type=int, default=8, help="stories, seeds 0..N-1 (default: 8)")
    ap.add_argument(
        "--frames", type=int, default=1806, help="frames of each story (default: 1806, 72 s)"
    )
    ap.add_argument(
        "--cooldown",
        type=float,
        default=1.0,
        help="seconds after an alert before the next may start (default: 1)",
    )
    ap.add_argument(
        "--threshold",
        type=threshold_arg,
        action="append",
        default=[],
        help="CLASS=P, the alert threshold of a class (default: the model's own)",
    )
    ap.add_argument(
        "--preset",
        choices=synth.PRESETS,
        default="easy",
        help="easy: the plain demo scenes; real: the realistic ones (default: easy)",
    )
    args = ap.parse_args(argv)
    try:
        t = check(args.model, args.seeds, args.frames, args.cooldown, args.threshold, args.preset)
    except EdgeHFError as e:
        print(f"demo_check: error: {e}", file=sys.stderr)
        return e.exit_code
    where = ", ".join(f"seed {s} frame {f} ({lab})" for s, f, lab in t.false) or "none"
    print(f"{args.model}: {t.hits}/{t.falls} falls alerted; {len(t.false)} false alerts: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
