"""Streams per box: how many paced 720p25 H.264 cameras edge-hf keeps up with, against the
decode-only ceiling, N rising, in one run.

``python -m bench.streams --n 1,2,4,8,12,16,20,24,28,32 --seconds 8`` (about 2 x 3 x 10 x 9 s, some
9 minutes on the 2-core box; ``--n 1,2 --seconds 4`` is the short sweep the CI bench runs, about
40 s) writes ``bench/results/streams.md`` (the table) and ``streams.png`` (the curves).

Every side plays N looping 720p25 H.264 files at real time (paced, one FFmpeg decoder thread per
camera, as ``edge-hf run`` opens them) at hop 5: the model runs 5 times a second per camera.

- ``decode``: decode only, one Python thread per camera: grab every frame, retrieve and resize
  the frames a hyperframe at hop 5 uses (the runtime's own sampler says which), nothing else.
- ``edge-hf``: the runtime itself (``Runtime``, the embedded demo model, batching across
  cameras), motion gating off; ``edge-hf+motion``: the same with ``--motion``.

N-1 cameras show a mostly still scene (the synthetic figure standing, with fresh sensor noise in
every frame); camera ``fall`` shows a fall every 7 s (4 s standing, then the synthetic fall, seed 3). Per N and side,
over the run after its first third: frames kept (grabbed / due at 25 fps, all cameras), backlog
growth (frames per second per camera by which the cameras fall further behind real time),
hyperframes dropped (busy or stale), alert latency (the worst, from the grab of the fall's impact,
its last frame, to the alert reaching the sink, as models.evaluate counts delay; edge-hf only),
and CPU (cores, every thread). A side keeps up at N when the backlog does not grow (under 0.5
frames/s per camera) and, for edge-hf, every fall in the window is alerted within 1 s; the table
ends with the largest such N per side.
"""

from __future__ import annotations

import argparse
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from edge_hf import synth
from edge_hf.motion import MotionOptions
from edge_hf.runtime import DEMO_MODEL, RunConfig, Runtime
from edge_hf.sampler import StrideSampler, resize_into
from edge_hf.sources import SourceOptions
from edge_hf.sources.opencv import decoder_params

# a 7 s loop, a multiple of the hop so that each fall is seen alike: 4 s standing, then the
# fall and 3 s on the floor, so that each fall's alert ends (3 s without lying) before the next
FPS, HOP, LOOP, DOWN = 25, 5, 175, 75
SIZE = (1280, 720)
GROWTH_OK = 0.5  # frames/s per camera
LATENCY_OK = 1.0  # seconds
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Clips:
    still: Path
    fall: Path
    impact: int  # the fall clip's last frame of the fall (the model's alert waits for lying)


@dataclass(frozen=True)
class Row:
    side: str
    n: int
    kept: float  # frames grabbed / frames due
    growth: float  # frames/s per camera the backlog grew by
    dropped: int
    latency: float | None  # seconds, worst alert in the window (None: not measured / missed)
    cpu: float  # cores

    @property
    def ok(self) -> bool:
        on_time = self.side == "decode" or (self.latency is not None and self.latency <= LATENCY_OK)
        return self.growth < GROWTH_OK and on_time


def _h264(frames, path: Path) -> Path:
    """Frames (180x320) -> 720p25 H.264 with fresh sensor noise per frame, a keyframe a second."""
    raw = path.with_suffix(".avi")
    out = cv2.VideoWriter(str(raw), cv2.VideoWriter_fourcc(*"MJPG"), FPS, (320, 180))
    for f in frames:
        out.write(f)
    out.release()
    cmd = [
        "ffmpeg",
        "-hide_banner",
        "-nostdin",
        "-loglevel",
        "error",
        "-y",
        "-i",
        str(raw),
        "-vf",
        f"scale={SIZE[0]}:{SIZE[1]},noise=alls=6:allf=t",
        "-an",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-g",
        str(FPS),
        "-bf",
        "0",
        "-pix_fmt",
        "yuv420p",
        "-r",
        str(FPS),
        str(path),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return path


def write_clips(d: Path) -> Clips:
    fall = synth.make_scene("fall", seed=3, size=(180, 320))
    (impact,) = [b for _, b, label in fall.phases() if label == "fall"]
    frames = []
    for i in range(DOWN):
        f = np.zeros((180, 320, 3), np.uint8)
        fall.render(min(i, fall.length - 1), f)
        frames.append(f)
    up = LOOP - DOWN
    frames = [frames[0]] * up + frames  # standing (up again), then the fall
    still = [frames[0]] * LOOP  # the standing figure, before it falls
    return Clips(_h264(still, d / "still.mp4"), _h264(frames, d / "fall.mp4"), up + impact)


class _Sink:
    def __init__(self) -> None:
        self.starts: list[tuple[float, object]] = []

    def start(self, run) -> None:
        pass

    def emit(self, event) -> None:
        if event.kind == "start":
            self.starts.append((time.time(), event))

    def close(self) -> None:
        pass


def _window(seconds: float, sample) -> tuple[float, object, object, float, float]:
    """Sleep a third of ``seconds``, sample, sleep the rest, sample: (dt, first, last, cpu, t1)."""
    time.sleep(seconds / 3)
    t1, c1, first = time.monotonic(), time.process_time(), sample()
    time.sleep(seconds * 2 / 3)
    t2, c2, last = time.monotonic(), time.process_time(), sample()
    return t2 - t1, first, last, (c2 - c1) / (t2 - t1), time.time() - (t2 - t1)


def edge_row(n: int, clips: Clips, seconds: float, motion: bool) -> Row:
    cams = [f"fall={clips.fall}"] + [f"c{i}={clips.still}" for i in range(1, n)]
    cfg = RunConfig(
        cameras=tuple(cams),
        model=DEMO_MODEL,
        every=HOP,
        cooldown=0.0,
        source_opts=SourceOptions(loop=True),
        motion=MotionOptions(enabled=motion),
    )
    sink, stop = _Sink(), threading.Event()
    rt = Runtime(cfg, [sink], stop)
    runner = threading.Thread(target=rt.run)
    runner.start()
    try:
        dt, first, last, cpu, wall1 = _window(seconds, rt.counters)
        time.sleep(LATENCY_OK)  # a fall near the window's end alerts after it, in time or not
    finally:
        stop.set()
        runner.join(60)
    grabbed = [b.grabbed - a.grabbed for a, b in zip(first.cameras, last.cameras, strict=True)]
    dropped = sum(
        dict(b.skipped)[r] - dict(a.skipped)[r]
        for a, b in zip(first.cameras, last.cameras, strict=True)
        for r in ("busy", "stale")
    )
    side = "edge-hf+motion" if motion else "edge-hf"
    return Row(side, n, *_rates(grabbed, dt), dropped, _latency(sink, clips, wall1, dt), cpu)


def _rates(grabbed: list[int], dt: float) -> tuple[float, float]:
    due = FPS * dt
    kept = sum(grabbed) / (due * len(grabbed))
    growth = max(0.0, (due * len(grabbed) - sum(grabbed)) / len(grabbed) / dt)
    return kept, growth


def _latency(sink: _Sink, clips: Clips, since: float, dt: float) -> float | None:
    """The worst delay from the grab of a fall's impact to its alert, over the falls whose
    impact came after ``since`` (wall time); None if fewer were alerted than the window
    (``dt`` seconds) held falls due by its end."""
    worst, alerted = 0.0, set()
    for emitted, ev in sink.starts:
        if ev.camera != "fall":
            continue
        impact = ev.frame - (ev.frame % LOOP - clips.impact)  # this loop's fall
        impact_wall = ev.time - (ev.frame - impact) / FPS
        if impact_wall >= since:
            alerted.add(impact // LOOP)
            worst = max(worst, emitted - impact_wall)
    due = int((dt - LATENCY_OK) // (LOOP / FPS))
    return worst if alerted and len(alerted) >= due else None


def decode_row(n: int, clips: Clips, seconds: float) -> Row:
    spec = _spec()
    sampler = StrideSampler(spec, HOP)
    counts, stop = [0] * n, threading.Event()

    def camera(k: int) -> None:
        clip = clips.fall if k == 0 else clips.still
        cap = cv2.VideoCapture(str(clip), cv2.CAP_FFMPEG, decoder_params(1))
        small = np.zeros((*spec.size, 3), np.uint8)
        buf, t0 = None, time.perf_counter()
        while not stop.is_set():
            if (delay := t0 + counts[k] / FPS - time.perf_counter()) > 0:
                time.sleep(delay)
            if not cap.grab():
                cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
                continue
            if sampler.is_needed(counts[k]):
                _, buf = cap.retrieve(buf)
                resize_into(buf, small, spec.interpolation)
            counts[k] += 1
        cap.release()

    threads = [threading.Thread(target=camera, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    try:
        dt, first, last, cpu, _ = _window(seconds, lambda: list(counts))
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    grabbed = [b - a for a, b in zip(first, last, strict=True)]
    return Row("decode", n, *_rates(grabbed, dt), 0, None, cpu)


def _spec():
    from edge_hf.backends import load_backend

    return load_backend(DEMO_MODEL).spec


def sweep(ns: list[int], seconds: float, clips: Clips, motion: bool = True) -> list[Row]:
    rows = []
    for n in ns:
        rows.append(decode_row(n, clips, seconds))
        rows.append(edge_row(n, clips, seconds, motion=False))
        if motion:
            rows.append(edge_row(n, clips, seconds, motion=True))
    return rows


def largest(rows: list[Row], side: str) -> int:
    """The largest N at which the side kept up, every smaller N included (0: not even one)."""
    best = 0
    for r in sorted((r for r in rows if r.side == side), key=lambda r: r.n):
        if not r.ok:
            break
        best = r.n
    return best


def table(rows: list[Row]) -> str:
    out = [
        "| side | N | frames kept | backlog growth (frames/s/camera) | dropped | alert latency (s) | CPU (cores) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lat = "-" if r.side == "decode" else ("missed" if r.latency is None else f"{r.latency:.2f}")
        out.append(
            f"| {r.side} | {r.n} | {r.kept:.1%} | {r.growth:.2f} | {r.dropped} | {lat} | {r.cpu:.2f} |"
        )
    kept = [f"{side} {largest(rows, side)}" for side in dict.fromkeys(r.side for r in rows)]
    return "\n".join(out) + "\n\nlargest N kept up: " + ", ".join(kept)


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, cx) = plt.subplots(1, 2, figsize=(10, 4))
    for side in dict.fromkeys(r.side for r in rows):
        mine = [r for r in rows if r.side == side]
        ax.plot([r.n for r in mine], [r.kept * 100 for r in mine], marker="o", label=side)
        cx.plot([r.n for r in mine], [r.cpu for r in mine], marker="o", label=side)
    ax.set_ylabel("frames kept (%)")
    ax.set_ylim(0, 105)
    cx.set_ylabel("CPU (cores)")
    for a in (ax, cx):
        a.set_xlabel("cameras (720p25 H.264, hop 5)")
        a.legend()
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n", default="1,2,4,8,12,16,20,24,28,32", help="camera counts, comma-separated"
    )
    ap.add_argument("--seconds", type=float, default=8.0, help="per N and side")
    ap.add_argument("--no-motion", action="store_true", help="skip the edge-hf+motion side")
    args = ap.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        rows = sweep(ns, args.seconds, write_clips(Path(d)), motion=not args.no_motion)
    RESULTS.mkdir(exist_ok=True)
    text = table(rows)
    (RESULTS / "streams.md").write_text(text + "\n")
    plot(rows, RESULTS / "streams.png")
    print(text)
    print(f"\n{time.monotonic() - t0:.0f} s; bench/results/streams.md and streams.png written")


if __name__ == "__main__":
    main()
