"""``Health``: which loops are stale (for /healthz), and which make the process stuck (for the
watchdog): any loop of its own, or a whole group (the cameras), never one camera of several."""

from __future__ import annotations

import time

import pytest

from edge_hf.health import Health

LIMIT = 5.0


@pytest.mark.parametrize(
    ("stale", "retired", "stuck"),
    [
        ((), (), []),
        (("capture a",), (), []),  # one camera of two hangs: the other goes round
        (("capture a", "capture b"), (), ["capture a", "capture b"]),  # every camera
        (("capture a",), ("capture b",), ["capture a"]),  # the only camera left hangs
        (("inference",), (), ["inference"]),  # the model, whatever the cameras do
        (("mqtt sink", "capture a"), (), ["mqtt sink"]),
        (("inference",), ("inference",), []),  # ended on purpose
    ],
)
def test_the_process_is_stuck_when_a_loop_of_its_own_or_every_camera_is(stale, retired, stuck):
    health = Health()
    beats = {name: health.loop(name) for name in ("inference", "mqtt sink")}
    beats |= {name: health.loop(name, group="cameras") for name in ("capture a", "capture b")}
    for name in stale:
        beats[name].last = time.monotonic() - 2 * LIMIT
    for name in retired:
        beats[name].retire()
    assert health.stuck(LIMIT) == stuck
    assert health.stale(LIMIT) == [n for n in stale if n not in retired]  # /healthz: each one
