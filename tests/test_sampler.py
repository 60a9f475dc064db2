from __future__ import annotations

import numpy as np
import pytest

from edge_hf.errors import UsageError
from edge_hf.sampler import StrideSampler, hop_from_hz, resize_into
from edge_hf.spec import HyperframeSpec, Scale


def spec(frames: int, stride: int, scales=()) -> HyperframeSpec:
    return HyperframeSpec(frames=frames, stride=stride, size=(2, 2), classes=("a",), scales=scales)


def drive(sm: StrideSampler, n: int) -> tuple[list[list[int]], list[int]]:
    """Feed frames 0..n-1 whose pixels encode their index; return what each hyperframe holds
    (read back from the gathered buffer, not from the sampler's bookkeeping) and which frames
    were stored."""
    out = sm.input_buffers()
    got, stored = [], []
    for i in range(n):
        if sm.is_needed(i):
            sm.slot(i)[..., 0], sm.slot(i)[..., 1] = i % 256, i // 256
            stored.append(i)
        if sm.is_anchor(i):
            sm.gather(i, out)
            got.append([int(f[0, 0, 0]) + 256 * int(f[0, 0, 1]) for f in out[0][0]])
    return got, stored


@pytest.mark.parametrize(
    ("frames", "stride", "every", "n", "hyperframes", "stored"),
    [
        (1, 1, 1, 4, [[0], [1], [2], [3]], [0, 1, 2, 3]),
        (1, 1, 3, 7, [[0], [3], [6]], [0, 3, 6]),
        (3, 1, 1, 5, [[0, 1, 2], [1, 2, 3], [2, 3, 4]], [0, 1, 2, 3, 4]),
        (3, 1, 2, 7, [[0, 1, 2], [2, 3, 4], [4, 5, 6]], [0, 1, 2, 3, 4, 5, 6]),
        (3, 1, 5, 13, [[0, 1, 2], [5, 6, 7], [10, 11, 12]], [0, 1, 2, 5, 6, 7, 10, 11, 12]),
        (5, 2, 1, 10, [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]], list(range(10))),
        (
            5,
            2,
            4,
            17,
            [[0, 2, 4, 6, 8], [4, 6, 8, 10, 12], [8, 10, 12, 14, 16]],
            list(range(0, 17, 2)),
        ),
        (5, 2, 10, 19, [[0, 2, 4, 6, 8], [10, 12, 14, 16, 18]], list(range(0, 19, 2))),
        (16, 4, 8, 69, [list(range(0, 61, 4)), list(range(8, 69, 4))], list(range(0, 69, 4))),
        # stride 4, hop 3: past the start, every frame belongs to some later hyperframe
        (
            16,
            4,
            3,
            64,
            [list(range(0, 61, 4)), list(range(3, 64, 4))],
            [i for i in range(64) if i not in (1, 2, 5)],
        ),
    ],
)
def test_hyperframe_indices(frames, stride, every, n, hyperframes, stored):
    got, kept = drive(StrideSampler(spec(frames, stride), every), n)
    assert got == hyperframes
    assert kept == stored


@pytest.mark.parametrize(
    ("frames", "stride", "every"), [(3, 1, 1), (5, 2, 3), (16, 4, 5), (4, 3, 7)]
)
def test_ring_wraps_around_for_thousands_of_frames(frames, stride, every):
    sm = StrideSampler(spec(frames, stride), every)
    got, _ = drive(sm, 3000)
    first = (frames - 1) * stride
    expect = [
        [a - (frames - 1 - j) * stride for j in range(frames)] for a in range(first, 3000, every)
    ]
    assert got == expect
    assert sm.ring.shape[0] == first + 1  # the ring never grows


def test_pyramid_inputs_gather_their_own_frames():
    sm = StrideSampler(spec(3, 1, scales=(Scale(3, 1, 0), Scale(3, 4, 1))), every=2)
    out = sm.input_buffers()
    assert [b.shape for b in out] == [(1, 3, 2, 2, 3), (1, 3, 2, 2, 3)]
    for i in range(20):
        if sm.is_needed(i):
            sm.slot(i)[...] = i
        if sm.is_anchor(i):
            sm.gather(i, out)
            assert [list(b[0, :, 0, 0, 0]) for b in out] == [
                [i - 2, i - 1, i],
                [i - 9, i - 5, i - 1],
            ]
            assert sm.frames_of(i) == [[i - 2, i - 1, i], [i - 9, i - 5, i - 1]]


@pytest.mark.parametrize("every", [0, -1, 1.5])
def test_every_must_be_a_positive_int(every):
    with pytest.raises(UsageError, match="--every must be a whole number of frames 1 to 100000"):
        StrideSampler(spec(3, 1), every)


@pytest.mark.parametrize(
    ("hz", "fps", "every"), [(5, 25, 5), (25, 25, 1), (100, 25, 1), (2, 30, 15), (0.5, 10, 20)]
)
def test_hop_from_hz(hz, fps, every):
    assert hop_from_hz(hz, fps) == every


def test_resize_into_writes_in_place_and_squashes():
    frame = np.zeros((360, 640, 3), np.uint8)
    frame[:, 320:] = 255  # right half white
    ring = np.zeros((2, 4, 8, 3), np.uint8)
    slot = ring[1]
    resize_into(frame, slot, "linear")
    assert ring[1, :, :4].max() == 0 and ring[1, :, 4:].min() == 255
    assert ring[0].max() == 0
