"""Two-stage cost: CPU time per source frame of the screening model alone against screened +
confirmed, measured in one run (interleaved rounds, medians), on a video file.

    python -m bench.twostage [--screen MODEL] [--confirm MODEL] [--video FILE] [--rounds 3]

Defaults: the embedded demo model screens; the confirming model is an untrained temporal pyramid
of the same backbone (MobileNetV3-small, fast 3x1 and slow 3x4, 160 px; exported to ONNX here,
which needs torch) and the video is the synthetic demo story (60 s, 320x180, MJPG, written here).
Four runs per round: the screen alone; two-stage with a screening threshold of 1.0 (nothing
is confirmed: the cost of the mode itself, the gather of the second model's inputs included);
two-stage at the default screening threshold (0.5: the demo story has a fall or a lie-down every
12 s or so); two-stage with every hop confirmed (screening threshold 0.001: the upper bound). CPU is the process's (decode, sampler, both models: every thread).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

from edge_hf import synth
from edge_hf.runtime import DEMO_MODEL, RunConfig, Runtime
from edge_hf.sources import SourceOptions

FRAMES = 1500  # 60 s at 25 fps


def pyramid_onnx(screen: Path, out: Path) -> Path:
    """An untrained pyramid with the screening model's classes and size (torch needed)."""
    from dataclasses import replace

    from edge_hf.backends import load_backend
    from edge_hf.spec import Scale
    from models.factory import build
    from models.to_onnx import export_onnx

    spec = load_backend(screen).spec
    spec = replace(spec, scales=(Scale(3, 1), Scale(3, 4)), provenance=(("data", "untrained"),))
    net = build("mobilenetv3_small_100", 3, len(spec.classes), scales=2).eval()
    net.fold()
    export_onnx(net, spec, out)
    return out


def demo_story(folder: Path) -> Path:
    """The synthetic demo story, 60 s at 320x180, as an MJPG file in ``folder``."""
    video = folder / "story.avi"
    synth.write_clip(
        video, synth.make_scene("demo", seed=0, size=(180, 320)), FRAMES, fourcc="MJPG"
    )
    return video


def once(screen: Path, confirm: Path | None, video: Path, screen_thr: float | None) -> dict:
    cfg = RunConfig(
        cameras=(str(video),),
        model=screen,
        confirm=confirm,
        screen_thresholds=(("fall", screen_thr),) if screen_thr else (),
        source_opts=SourceOptions(fast=True),
    )
    rt = Runtime(cfg, [], threading.Event())
    t0 = time.process_time()
    rt.run()
    cpu = time.process_time() - t0
    frames = rt.cameras[0].stats.grabbed
    model = rt.latency.total + (rt.two.latency.total if rt.two else 0.0)
    return {
        "cpu_ms": 1000 * cpu / frames,
        "model_ms": 1000 * model / frames,
        "screened": rt.two.screens if rt.two else 0,
        "hops": rt.latency.count,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench.twostage", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--screen", type=Path, default=DEMO_MODEL)
    ap.add_argument("--confirm", type=Path, help="default: an untrained pyramid (torch needed)")
    ap.add_argument("--video", type=Path, help="default: the demo story, 60 s")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        confirm = args.confirm or pyramid_onnx(args.screen, Path(tmp) / "pyramid.onnx")
        video = args.video or demo_story(Path(tmp))
        runs = {
            "screen alone": (None, None),
            "two-stage, nothing screened": (confirm, 1.0),
            "two-stage": (confirm, None),
            "two-stage, every hop confirmed": (confirm, 0.001),
        }
        got: dict[str, list[dict]] = {k: [] for k in runs}
        for _ in range(args.rounds):
            for name, (c, thr) in runs.items():
                got[name].append(once(args.screen, c, video, thr))
    base = statistics.median(r["cpu_ms"] for r in got["screen alone"])
    print(f"screen {args.screen.name}, confirm {confirm.name}, {args.rounds} rounds (medians)")
    print("| run | CPU ms/frame | model ms/frame | x screen alone | hops screened |")
    print("|---|---|---|---|---|")
    for name, rows in got.items():
        cpu = statistics.median(r["cpu_ms"] for r in rows)
        model = statistics.median(r["model_ms"] for r in rows)
        share = rows[0]["screened"] / rows[0]["hops"]
        print(f"| {name} | {cpu:.3f} | {model:.3f} | {cpu / base:.2f} | {share:.1%} |")


if __name__ == "__main__":
    main()
