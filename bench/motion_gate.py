"""Motion gating, with the demo model on video files this writes: model calls on a still scene,
gated and not, and how late a fall after a still stretch is alerted.

``python -m bench.motion_gate`` (about 10 s of CPU): a 10 s clip of a still scene (one frame
of the synthetic ``hold`` scene with fresh sensor noise per frame, MJPG) at hop 1 and 5; then
6 s of the standing figure followed by the synthetic fall. The same clips as
tests/test_motion.py, which asserts the cut (>= 80 %) and the delay (<= 1 s).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from edge_hf import synth
from tests import test_motion as clips


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        first = np.zeros((*clips.SIZE, 3), np.uint8)
        synth.make_scene("hold", seed=3, size=clips.SIZE).render(0, first)
        still = clips._write(Path(tmp) / "still.avi", clips._noisy(first, 10 * clips.FPS, seed=1))
        for every in (1, 5):
            on, _ = clips._run(still, motion=True, every=every)
            off, _ = clips._run(still, motion=False, every=every)
            a, b = on.latency.count, off.latency.count
            print(
                f"still 10 s, hop {every}: {a} model calls gated, {b} ungated ({1 - a / b:.0%} cut)"
            )
        fall, onset = clips.still_then_fall.__wrapped__(_Factory(Path(tmp)))
        for motion in (False, True):
            rt, sink = clips._run(fall, motion=motion)
            starts = [e.frame for e in sink.events if e.kind == "start" and e.label == "fall"]
            delay = f"{(starts[0] - onset) / clips.FPS:.2f} s" if starts else "not alerted"
            print(
                f"fall after {clips.STILL_S} s still, gating {'on' if motion else 'off'}: alert "
                f"{delay} after the fall began, {rt.latency.count} model calls"
            )


class _Factory:
    """Stands in for pytest's tmp_path_factory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def mktemp(self, name: str) -> Path:
        path = self.root / name
        path.mkdir()
        return path


if __name__ == "__main__":
    main()
