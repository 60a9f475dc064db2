"""Heap measurement across the runtime's threads: a source wrapper that snapshots the Python
heap (numpy buffers included) at given frame counts. Used by tests/test_runtime.py (no per-frame
allocation) and bench/test_memory_bench.py (bytes per frame, the memory gates)."""

from __future__ import annotations

import tracemalloc

# The snapshots' own allocations, and onnxruntime's Python wrapper, which under tracemalloc fills
# a bounded cache over its first ~2000 calls (tests/test_backends.py proves it stops growing).
IGNORED = [
    tracemalloc.Filter(False, tracemalloc.__file__),
    tracemalloc.Filter(False, "*onnxruntime_inference_collection.py"),
]


class AllocationProbe:
    """Wraps a real source; at each of ``marks`` (frame counts) takes a heap snapshot, records
    the high-water since the previous mark (``peak``) and the heap after it (``base``)."""

    def __init__(self, source, marks: tuple[int, ...]) -> None:
        self.inner, self.marks = source, marks
        self.name, self.display, self.live = source.name, source.display, source.live
        self.count = 0
        self.snapshots: list[tracemalloc.Snapshot] = []
        self.base = self.peak = 0

    @property
    def fps(self) -> float:
        return self.inner.fps

    def open(self) -> None:
        self.inner.open()

    def grab(self) -> bool:
        self.count += 1
        if self.count in self.marks:
            self.peak = tracemalloc.get_traced_memory()[1]
            self.snapshots.append(tracemalloc.take_snapshot().filter_traces(IGNORED))
            tracemalloc.reset_peak()  # measure from here, not the snapshot's own allocations
            self.base = tracemalloc.get_traced_memory()[0]
        return self.inner.grab()

    def retrieve(self, out=None):
        return self.inner.retrieve(out)

    def release(self) -> None:
        self.inner.release()
