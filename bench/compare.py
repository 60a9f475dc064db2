"""Models' cost through the runtime, measured in one run: CPU time per source frame of each model
on the same video (interleaved rounds, medians), the first model the reference.

    python -m bench.compare MODEL [MODEL ...] [--video FILE] [--rounds 3]

What it answers: does a model cost more on the device than another, everything counted (decode,
the sampler's ring, the model's own time: every thread of the process), e.g. a hyperframe of 7
frames against one of 3 through the same backbone. The video defaults to the synthetic demo
story (60 s, 320x180, MJPG, written here), as in ``bench.twostage``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench.twostage import demo_story, once
from edge_hf.backends import load_backend


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n")[0])
    ap.add_argument("models", type=Path, nargs="+", help=".onnx or .xml files")
    ap.add_argument("--video", type=Path, help="default: the demo story, 60 s")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        video = args.video or demo_story(Path(tmp))
        got: dict[Path, list[dict]] = {m: [] for m in args.models}
        for _ in range(args.rounds):
            for m in args.models:
                got[m].append(once(m, None, video, None))
    cpu = {m: statistics.median(r["cpu_ms"] for r in rows) for m, rows in got.items()}
    model = {m: statistics.median(r["model_ms"] for r in rows) for m, rows in got.items()}
    ref = args.models[0]
    print(f"{video.name}, {args.rounds} rounds (medians)")
    print("| model | hyperframe | CPU ms/frame | model ms/frame | x first |")
    print("|---|---|---|---|---|")
    for m in args.models:
        spec = load_backend(m).spec
        shape = "+".join(f"{s.frames}x{s.stride}" for s in spec.inputs)
        print(f"| {m} | {shape} | {cpu[m]:.3f} | {model[m]:.3f} | {cpu[m] / cpu[ref]:.2f} |")


if __name__ == "__main__":
    main()
