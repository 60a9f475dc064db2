"""``edge_hf.sinks.mqtt.fit``: packet sizes as a real mosquitto counts them, snapshots
re-encoded to fit, and what the broker is believed to take."""

from __future__ import annotations

import threading

import cv2
import numpy as np
import paho.mqtt.client as mqtt
import pytest

from edge_hf import synth
from edge_hf.sinks.mqtt.fit import MIN_HEIGHT, Room, largest_payload, packet_size, shrink_jpeg
from edge_hf.snapshots import _jpeg, _small
from tests.broker import Mosquitto, have_mosquitto
from tests.live import wait_until


def snapshot() -> bytes:
    """The small JPEG of a 960x540 synthetic frame, as ``--snapshots`` makes it (~6.8 KB)."""
    frame = np.zeros((540, 960, 3), np.uint8)
    synth.make_scene("demo", seed=0, size=(540, 960)).render(100, frame)
    return _jpeg(_small(frame))


@pytest.mark.skipif(not have_mosquitto(), reason="needs mosquitto (scripts/setup.sh)")
def test_the_largest_payload_that_fits_is_taken_and_a_bigger_one_costs_the_connection():
    limit, topic = 1000, "edge-hf/demo/fall/snapshot"
    fits = largest_payload(topic, limit, v5=True)
    assert packet_size(topic, fits, v5=True) == limit
    with Mosquitto(max_packet_size=limit) as broker:
        acks, lost, up = [], threading.Event(), threading.Event()
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        c.on_connect = lambda *a: up.set()
        c.on_publish = lambda client, userdata, mid, rc, props: acks.append(rc.is_failure)
        c.on_disconnect = lambda *a: lost.set()
        c.connect("127.0.0.1", broker.port)
        c.loop_start()
        try:
            assert up.wait(10)
            c.publish(topic, b"x" * fits, qos=1)
            assert wait_until(lambda: acks == [False], 10)  # exactly the limit: taken
            # mosquitto leaves the remaining length's own bytes out of its count: 3 more
            c.publish(topic, b"x" * (fits + 3), qos=1)
            assert lost.wait(10) and acks == [False]  # over it: the connection goes
        finally:
            c.disconnect()
            c.loop_stop()


@pytest.mark.parametrize(
    ("limit", "expect"),
    [
        (100_000, "as it was"),  # fits already: the best quality that fits is the first tried
        (4000, "smaller"),  # a lower quality at the same size
        (1500, "smaller"),  # a smaller picture
        (300, None),  # not even at MIN_HEIGHT
    ],
)
def test_a_snapshot_is_re_encoded_to_fit_or_given_up(limit, expect):
    jpeg = snapshot()
    out = shrink_jpeg(jpeg, limit)
    if expect is None:
        assert out is None
        return
    assert out is not None and len(out) <= limit
    image = cv2.imdecode(np.frombuffer(out, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape[0] >= MIN_HEIGHT
    if expect == "as it was":
        assert image.shape[:2] == (270, 480)
    else:
        assert len(out) < len(jpeg)


def test_what_is_not_a_picture_cannot_be_shrunk():
    assert shrink_jpeg(b"not a jpeg at all" * 100, 500) is None


def test_the_ceiling_halves_but_never_below_what_the_broker_took():
    room = Room()
    assert room.limit("t", snapshot=True) is None  # nothing known: no limit
    room.connected(max_packet=1000, v5=True)
    # 1000 - header 1 - length 2 - topic 2+1 - packet id 2 - properties 1
    assert room.limit("t", snapshot=False) == largest_payload("t", 1000, True) == 991
    room.connected(max_packet=None, v5=True)
    assert room.too_large(6000) == 3000 and not room.wary  # refused: no connection lost
    room.accepted(2900)
    assert room.too_large(2990, lost=True) == 2900 and room.wary  # 1495 < what went through
    assert room.limit("t", snapshot=True) == 2900 and room.limit("t", snapshot=False) is None


def test_over_mqtt_3_1_1_snapshots_wait_for_the_alerts_from_the_start():
    room = Room()
    room.connected(max_packet=None, v5=False)
    assert room.wary and room.limit("t", snapshot=True) is None
