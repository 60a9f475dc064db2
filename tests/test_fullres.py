"""The full-resolution ring (edge_hf/fullres.py) on a real video file whose frames carry their
index: decoded in place, found by index, the too-late fallback, and the ownership rule."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from edge_hf.fullres import PIPELINE, FullResRing, slots_needed
from edge_hf.sources import SourceOptions
from edge_hf.sources.file import FileSource
from tests.numbered import frame_number, write_numbered


@pytest.fixture(scope="module")
def numbered(tmp_path_factory) -> Path:
    return write_numbered(tmp_path_factory.mktemp("clips") / "numbered.avi", 120, 40)


def opened(path: Path, loop: bool = False) -> FileSource:
    src = FileSource(str(path), "cam", SourceOptions(fast=True, loop=loop))
    src.open()
    return src


def test_slots_cover_k_of_n_the_pipeline_and_the_early_centre_frames():
    # 3 of the last 3 hyperframes, 2 in flight, the centre 3 frames back is 3 anchors early
    assert slots_needed(3, 3, 1) == 3 + PIPELINE + 3
    assert slots_needed(3, 3, 4) == 3 + PIPELINE  # decoded early, but within one hop
    assert slots_needed(1, 8, 4) == 1 + PIPELINE + 2
    assert slots_needed(3, 1, 1, held=1) == 3 + PIPELINE + 1 + 1  # one class waits for a pose


def test_a_held_frame_outlives_the_ring_until_released(numbered: Path):
    """An armed class's frame (alerts waiting for a pose): held while the ring turns over many
    times, copied when the alert starts, then written again like any other slot."""
    src, ring = opened(numbered), FullResRing("cam", 4, 0)
    for i in range(4):
        assert src.grab() and ring.decode(src, i) is not None
    assert ring.hold(2) and not ring.hold(99)  # 99: never decoded, nothing held
    for i in range(4, 40):
        assert src.grab() and ring.decode(src, i) is not None
    assert 2 in ring.index and sorted(ring.index)[1:] == [37, 38, 39]  # three slots turned
    assert frame_number(ring.copy(2)) == 2 and ring.late == 0
    ring.release(2)
    for i in range(40, 44):
        assert src.grab() and ring.decode(src, i) is not None
    assert sorted(ring.index) == [40, 41, 42, 43]  # let go: written over
    src.release()


def test_frames_are_decoded_in_place_and_found_by_index(numbered: Path):
    src, ring = opened(numbered), FullResRing("cam", 3, 0)
    for i in range(3):
        assert src.grab() and ring.decode(src, i) is not None
    slots = [id(s) for s in ring.slots]
    for i in range(3, 10):
        assert src.grab() and ring.decode(src, i) is ring.slots[(i - 3) % 3]
    assert [id(s) for s in ring.slots] == slots  # the decoder wrote into them: no new arrays
    assert frame_number(src._frame) == 2  # and not into its own buffer, to be copied from
    assert sorted(ring.index) == [7, 8, 9]
    for i in (7, 8, 9):
        frame = ring.copy(i)
        assert frame_number(frame) == i and frame.shape == (360, 640, 3)
        assert not any(frame is s for s in ring.slots)  # a copy, the ring moves on
    assert ring.late == 0
    src.release()


def test_a_frame_that_is_gone_falls_back_to_the_newest_counted_and_said_once(numbered, caplog):
    caplog.set_level(logging.WARNING, "edge_hf.snapshots")
    src, ring = opened(numbered), FullResRing("cam", 3, 0)
    assert ring.copy(0) is None and ring.late == 0  # nothing decoded yet: no snapshot
    for i in range(10):
        assert src.grab() and ring.decode(src, i) is not None
    assert frame_number(ring.copy(5)) == 9 and ring.late == 1
    assert frame_number(ring.copy(0)) == 9 and ring.late == 2
    said = [r for r in caplog.records if "no longer kept" in r.getMessage()]
    assert len(said) == 1 and "snapshot frame 5" in said[0].getMessage()
    src.release()


def test_a_slot_being_copied_is_never_written(numbered: Path):
    src, ring = opened(numbered), FullResRing("cam", 3, 0)
    for i in range(3):
        assert src.grab() and ring.decode(src, i) is not None
    held = ring.index.index(1)
    ring._pins[held] += 1  # a reader is copying frame 1 (what copy() does under the lock)
    for i in range(3, 9):
        assert src.grab() and ring.decode(src, i) is not None
    assert ring.index[held] == 1 and frame_number(ring.slots[held]) == 1
    ring._pins = [1, 1, 1]  # every slot being copied: decoded, not kept
    before = list(ring.index)
    assert src.grab() and frame_number(ring.decode(src, 9)) == 9
    assert ring.index == before
    src.release()


def test_copies_made_while_capture_writes_are_never_torn(numbered: Path):
    """The capture thread decodes a looping file into 3 slots as fast as it can while this
    thread copies the frames it names: each copy must be the frame asked for, whole."""
    src, ring = opened(numbered, loop=True), FullResRing("cam", 3, 0)
    stop, count = threading.Event(), [0]

    def capture() -> None:
        while not stop.is_set() and src.grab():
            ring.decode(src, count[0])
            count[0] += 1

    writer = threading.Thread(target=capture)
    writer.start()
    checked = 0
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            i = max(ring.index)
            if i < 0:
                continue
            late = ring.late
            frame = ring.copy(i)
            if ring.late == late:  # still kept when asked for
                assert frame_number(frame) == i % 120
                checked += 1
    finally:
        stop.set()
        writer.join(10)
        src.release()
    assert checked > 20 and count[0] > 60
