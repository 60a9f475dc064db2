"""The inference side of a run: one worker batches the cameras' ready hyperframes into one call.

``Batcher.collect`` waits for a first ready camera, then at most ``wait`` seconds more for others
(never when every camera whose frames flow is ready already, so one camera alone never waits,
nor one beside cameras that are down), and takes up to
``size`` of them, the camera waiting longest first (since its first hyperframe after its last
turn; a newer hyperframe replaces a waiting one but keeps its place): each camera has at most one
hyperframe waiting, so no camera takes a second row before every other ready camera has had its
turn, and a slow or silent camera holds nobody up for longer than ``wait``. Rows go back to
their cameras by position (``rows[r]`` is row ``r``'s camera).

Why one batch-N call, not several requests in flight: measured on the 2-core box this was built
on with the demo model (``python -m bench.batching``; docs/performance.md), a batch of 8 costs
less CPU per hyperframe than batch 1 on both engines (OpenVINO INT8 0.83 against 0.94 ms,
onnxruntime 1.18 against 1.30 ms, which also runs 1.8 times as many a second in one thread).
Requests in flight (OpenVINO's AsyncInferQueue with the THROUGHPUT hint and 2 streams,
onnxruntime called from 2 or 4 threads) cost more CPU per hyperframe (1.07 and 1.37/1.20 ms):
OpenVINO's doubles the rate by taking the second core, which on a camera box is the decoders'.
CPU, not the model's wall time, is what limits the number of cameras, so: one worker, one call.
"""

from __future__ import annotations

import bisect
import threading
import time

import numpy as np

from edge_hf.camera import Camera
from edge_hf.health import LATENCY_BUCKETS


class InferenceStats:
    """Latency of the last 1024 model calls, preallocated; a histogram of all of them; and the
    number of hyperframes they scored (a batch of N scores N)."""

    def __init__(self) -> None:
        self.ms = np.zeros(1024, np.float64)
        self.calls = 0
        self.count = 0  # hyperframes scored
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0  # seconds

    def add(self, seconds: float, hyperframes: int = 1) -> None:
        self.ms[self.calls % len(self.ms)] = seconds * 1000.0
        self.calls += 1
        self.count += hyperframes
        self.buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds

    def percentile(self, q: float) -> float:
        n = min(self.calls, len(self.ms))
        return float(np.percentile(self.ms[:n], q)) if n else 0.0


def activate(activation: str, logits: np.ndarray, out: np.ndarray, rowmax: np.ndarray) -> None:
    """Logits to scores, row by row, into ``out`` (``rowmax``: a [rows, 1] scratch buffer)."""
    if activation == "sigmoid":
        np.negative(logits, out=out)
        np.exp(out, out=out)
        np.add(out, 1.0, out=out)
        np.reciprocal(out, out=out)
    else:
        np.max(logits, axis=1, keepdims=True, out=rowmax)
        np.subtract(logits, rowmax, out=out)
        np.exp(out, out=out)
        np.sum(out, axis=1, keepdims=True, out=rowmax)
        np.divide(out, rowmax, out=out)


class Batcher:
    """Collects ready hyperframes into the backend's bound inputs; called by one thread."""

    def __init__(
        self,
        cameras: list[Camera],
        cond: threading.Condition,
        inputs: list[np.ndarray],
        wait: float,
        max_age: float,
        stage: list[list[np.ndarray | None]] | None = None,
    ) -> None:
        self.cameras, self.cond, self.inputs = cameras, cond, inputs
        # two-stage mode: per row, the confirming model's inputs (swapped with the mailbox's)
        self.stage = stage
        self.size = inputs[0].shape[0]
        self.wait, self.max_age = wait, max_age
        self.rows: list[Camera | None] = [None] * self.size  # row -> its camera
        self.frames = [0] * self.size  # row -> source frame index of its newest frame
        self.times = [0.0] * self.size  # row -> wall time that frame was grabbed

    def collect(self, timeout: float = 0.1) -> int:
        """Fill up to ``size`` rows; the number filled: 0 when nothing was ready within
        ``timeout``, -1 when every camera's capture has ended."""
        with self.cond:
            ready = self._ready()
            if not ready:
                if all(c.capture.done.is_set() for c in self.cameras):
                    return -1
                self.cond.wait(timeout)
                ready = self._ready()
                if not ready:
                    return 0
            if ready < min(self.size, self._live()) and self.wait > 0:
                deadline = time.monotonic() + self.wait
                while ready < self.size and (left := deadline - time.monotonic()) > 0:
                    self.cond.wait(left)
                    ready = self._ready()
            return self._take()

    def _ready(self) -> int:
        return sum(c.mailbox.fresh for c in self.cameras)

    def _live(self) -> int:
        """Cameras that may have a hyperframe soon: frames flow (a camera that is down, or
        still opening, cannot join a batch)."""
        return sum(c.stats.connected and not c.capture.done.is_set() for c in self.cameras)

    def _take(self) -> int:
        """Take the ready hyperframes, oldest first; a stale one is discarded, not scored."""
        now = time.time()
        n = 0
        while n < self.size:
            cam = self._oldest()
            if cam is None:
                break
            box = cam.mailbox
            if not box.block and now - box.time > self.max_age:
                box.discard()
                continue
            box.take(self.inputs, n)
            if self.stage is not None:
                self.stage[n] = box.swap_confirm(self.stage[n])
            self.rows[n], self.frames[n], self.times[n] = cam, box.frame, box.time
            n += 1
        return n

    def _oldest(self) -> Camera | None:
        best = None
        for c in self.cameras:
            if c.mailbox.fresh and (best is None or c.mailbox.since < best.mailbox.since):
                best = c
        return best
