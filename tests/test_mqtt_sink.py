"""``MqttSink`` in-process against a real mosquitto: what only the inside can show - a row
leaves the spool on PUBACK and not before, and ``emit`` never waits for the broker.

A *frozen* broker is a real mosquitto stopped with SIGSTOP: its socket stays open and accepts
bytes, but nothing comes back (no PUBACK), as with a hung broker or a black-holed link.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from edge_hf.alerts import DOWN, Event
from edge_hf.errors import UsageError
from edge_hf.health import Counters, Health
from edge_hf.sinks import RunInfo
from edge_hf.sinks.mqtt.link import guarded as _guarded
from edge_hf.sinks.mqtt.options import MqttOptions
from edge_hf.sinks.mqtt.sink import MqttSink
from edge_hf.sinks.mqtt.spool import Spool
from tests.broker import Mosquitto, Subscriber, have_mosquitto, retained
from tests.live import wait_until

pytestmark = pytest.mark.skipif(not have_mosquitto(), reason="needs mosquitto (scripts/setup.sh)")


def run_info(cameras=("porch",), labels=("fall",)) -> RunInfo:
    return RunInfo(
        cameras=cameras,
        labels=labels,
        counters=lambda: Counters(time.monotonic(), (), 0, 0.0, 0.0),
        health=Health(),
    )


def event(kind: str = "start", small: bytes | None = None) -> Event:
    return Event(kind, str(uuid.uuid4()), "porch", "fall", 0.9, 0.9, 1, time.time(), small=small)


def sink_for(broker: Mosquitto, state: Path) -> MqttSink:
    return MqttSink(MqttOptions(host="127.0.0.1", port=broker.port, state_dir=state))


def test_a_row_leaves_the_spool_on_puback_and_not_before(tmp_path: Path):
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        sink = sink_for(broker, tmp_path)
        sink.start(run_info())
        try:
            assert wait_until(lambda: sub.payloads("edge-hf/available") == ["online"], 10)
            os.kill(broker.proc.pid, signal.SIGSTOP)
            try:
                for _ in range(5):
                    sink.emit(event())
                # handed to paho, which reports success (info.rc == 0) ...
                assert wait_until(lambda: len(sink._inflight) == 5, 10)
                # ... but without a PUBACK nothing may leave the spool
                assert sink.spool.depth == 5
            finally:
                os.kill(broker.proc.pid, signal.SIGCONT)
            assert wait_until(lambda: sink.spool.depth == 0, 10)
            assert wait_until(lambda: len(sub.payloads("edge-hf/events")) == 5, 10)
        finally:
            sink.close()


def test_emit_never_waits_for_a_frozen_broker(tmp_path: Path):
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        sink = sink_for(broker, tmp_path)
        sink.start(run_info())
        try:
            assert wait_until(lambda: sub.payloads("edge-hf/available") == ["online"], 10)
            os.kill(broker.proc.pid, signal.SIGSTOP)
            try:
                frame_loop = threading.Thread(
                    target=lambda: [sink.emit(event()) for _ in range(200)]
                )
                frame_loop.start()
                frame_loop.join(20)  # bounded: a sink that waited on the broker would hang here
                assert not frame_loop.is_alive()
                assert sink.spool.depth == 200
            finally:
                os.kill(broker.proc.pid, signal.SIGCONT)
            assert wait_until(lambda: sink.spool.depth == 0, 20)
        finally:
            sink.close()
        assert retained(broker.port, "edge-hf/porch/fall") == "ON"


def _offline_sink(broker: Mosquitto, tmp_path: Path):
    """A started sink that was connected and has lost its broker (stopped)."""
    sink = sink_for(broker, tmp_path)
    sink.start(run_info())
    assert wait_until(lambda: sink._connected, 10)
    broker.stop()
    assert wait_until(lambda: not sink._connected, 10)
    return sink


def test_a_closed_sink_keeps_unacknowledged_alerts_for_the_next_run(tmp_path: Path):
    with Mosquitto() as broker:
        sink = _offline_sink(broker, tmp_path)
        sent = [event() for _ in range(3)]
        for e in sent:
            sink.emit(e)
        sink.close()
        broker.start()
        with Subscriber(broker.port) as sub:
            again = sink_for(broker, tmp_path)
            again.start(run_info())
            try:
                assert wait_until(lambda: len(sub.payloads("edge-hf/events")) == 3, 10)
                got = sub.payloads("edge-hf/events")
                assert all(e.id in p for e, p in zip(sent, got, strict=True))  # oldest first
            finally:
                again.close()


def test_snapshots_raised_while_the_broker_is_down_arrive_each_before_its_event(tmp_path):
    """The retained snapshot is spooled with its event: a broker that is down when the alert
    starts, and a sink that is closed before it returns, lose neither, nor their order."""
    snap = "edge-hf/porch/fall/snapshot"
    with Mosquitto() as broker:
        sink = _offline_sink(broker, tmp_path)
        sent = [event(small=b"jpeg A"), event("end"), event(small=b"jpeg B")]
        for e in sent:
            sink.emit(e)
        sink.close()
        assert sink.spool.depth == 5  # two snapshots, three events
        broker.start()
        with Subscriber(broker.port) as sub:
            again = sink_for(broker, tmp_path)
            again.start(run_info())
            try:
                assert wait_until(lambda: len(sub.payloads("edge-hf/events")) == 3, 10)
                assert wait_until(lambda: again.spool.depth == 0, 5)
            finally:
                again.close()
        order = [
            m.payload if m.topic == snap else m.payload.split('"id":"')[1][:36]
            for m in sub.messages()
            if m.topic in (snap, "edge-hf/events")
        ]
        assert order == ["jpeg A", sent[0].id, sent[1].id, "jpeg B", sent[2].id]
        assert retained(broker.port, snap) == "jpeg B"  # published retained, the newest last


@pytest.mark.parametrize(
    ("cameras", "labels", "needle"),
    [
        (("a+b",), ("fall",), r"camera name 'a\+b' cannot be used in an MQTT topic.*NAME=SO"),
        (("porch",), ("fall/down",), "alert class 'fall/down' cannot be used"),
        (("c" * 70_000,), ("fall",), "70000 bytes makes MQTT state topics of 70013 bytes, over"),
    ],
)
def test_names_that_would_break_topics_are_refused_at_start(tmp_path, cameras, labels, needle):
    sink = MqttSink(MqttOptions(host="127.0.0.1", port=1, state_dir=tmp_path))
    with pytest.raises(UsageError, match=needle):
        sink.start(run_info(cameras, labels))
    sink.close()  # never started: a no-op


def test_a_raising_callback_is_logged_not_fatal(caplog):
    caplog.set_level(logging.ERROR, "edge_hf.mqtt")

    @_guarded
    def on_publish(client, userdata, mid, reason_code, properties):
        raise KeyError(mid)

    on_publish(None, None, 7, 0, None)  # would end paho's network thread if it escaped
    assert "bug in on_publish (carrying on)" in caplog.text and "KeyError: 7" in caplog.text


def test_rows_that_can_never_be_published_are_set_aside_and_the_rest_flow(tmp_path, caplog):
    """A spool row of the wrong type, and one whose topic paho refuses (over 65535 bytes),
    used to end delivery for good; now each is moved to the table 'rejected', named in an
    ERROR line and counted, and the alerts around them still arrive, in order."""
    caplog.set_level(logging.ERROR, "edge_hf")
    spool = Spool(tmp_path)
    spool.put("edge-hf/events", b"first")
    spool.close()
    with sqlite3.connect(tmp_path / Spool.FILENAME) as db:
        rows = [(b"edge-hf/events", b"blob topic"), ("edge-hf/events", 1.5), ("t" * 70_000, b"x")]
        db.executemany("INSERT INTO outbox (created, topic, payload) VALUES (0, ?, ?)", rows)
        db.execute(
            "INSERT INTO outbox (created, topic, payload) VALUES (0, 'edge-hf/events', ?)",
            ("text payload",),
        )
    spool = Spool(tmp_path)
    spool.put("edge-hf/events", b"last")
    spool.close()
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        sink = sink_for(broker, tmp_path)
        sink.start(run_info())
        try:
            assert wait_until(lambda: len(sub.payloads("edge-hf/events")) == 3, 10), caplog.text
            assert sub.payloads("edge-hf/events") == ["first", "text payload", "last"]
            assert wait_until(lambda: sink.spool.depth == 0, 5)
            assert sink.stats()["spool"]["rejected"] == 3
        finally:
            sink.close()
    with sqlite3.connect(tmp_path / Spool.FILENAME) as db:
        assert [r[0] for r in db.execute("SELECT id FROM rejected ORDER BY id")] == [2, 3, 4]
    lines = [r.getMessage() for r in caplog.records if "can never be published" in r.getMessage()]
    assert len(lines) == 3 and "alert 4 " in lines[2] and "topic is too long" in lines[2]


def test_a_worker_that_keeps_failing_logs_once_counts_backs_off_and_stops_the_heartbeat(
    tmp_path: Path, caplog
):
    caplog.set_level(logging.WARNING, "edge_hf.mqtt")
    info = run_info()
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        sink = sink_for(broker, tmp_path)
        sink.start(info)
        try:
            assert wait_until(lambda: sink._connected, 10)
            real, calls = sink.spool.pending, []

            def broken(*a, **kw):
                calls.append(time.monotonic())
                raise sqlite3.OperationalError("disk I/O error")

            sink.spool.pending = broken
            sink.emit(event())
            assert wait_until(lambda: sink.stats()["mqtt"]["errors"] >= 3, 15)
            assert info.health.stale(1.0) == ["mqtt sink"]  # no progress: no heartbeat
            gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
            assert gaps[1] > 1.5 * gaps[0]  # backing off, not spinning
            sink.spool.pending = real
            assert wait_until(lambda: len(sub.payloads("edge-hf/events")) == 1, 20)
            assert wait_until(lambda: not info.health.stale(1.0), 5)
        finally:
            sink.close()
    failed = [r for r in caplog.records if "the sink failed" in r.getMessage()]
    assert len(failed) == 1 and "disk I/O error" in failed[0].getMessage()  # once, not per try
    assert "working again after" in caplog.text


def test_a_state_is_on_exactly_while_its_alert_is_open_and_the_down_level_has_its_own(tmp_path):
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        sink = sink_for(broker, tmp_path)
        sink.start(run_info(labels=("fall", "fall_down")))
        fall = event()
        down = replace(fall, id=str(uuid.uuid4()), level=DOWN, down_for=10.0)
        steps = [  # each event, and both states once it is out
            (fall, "ON", "OFF"),
            (replace(fall, kind="update", down_for=5.0), "ON", "OFF"),
            (down, "ON", "ON"),
            (replace(down, kind="realarm", down_for=20.0), "ON", "ON"),
            (replace(fall, kind="update", down_for=20.0), "ON", "ON"),
            (replace(down, kind="end"), "ON", "OFF"),
            (replace(fall, kind="end"), "OFF", "OFF"),
        ]
        try:
            for i, (ev, fast, slow) in enumerate(steps):
                sink.emit(ev)

                def seen(i=i, fast=fast, slow=slow) -> bool:
                    return (
                        len(sub.payloads("edge-hf/events")) == i + 1
                        and sub.payloads("edge-hf/porch/fall")[-1:] == [fast]
                        and sub.payloads("edge-hf/porch/fall_down")[-1:] == [slow]
                    )

                assert wait_until(seen, 10), (i, sub.payloads("edge-hf/porch/fall_down"))
        finally:
            sink.close()
    # updates and re-alarms leave the states alone: one ON and one OFF each after the first
    assert sub.payloads("edge-hf/porch/fall") == ["OFF", "ON", "OFF"]
    assert sub.payloads("edge-hf/porch/fall_down") == ["OFF", "ON", "OFF"]
    sent = [json.loads(p) for p in sub.payloads("edge-hf/events")]
    assert [(e["event"], e["level"]) for e in sent] == [
        ("start", "fast"),
        ("update", "fast"),
        ("start", "down"),
        ("realarm", "down"),
        ("update", "fast"),
        ("end", "down"),
        ("end", "fast"),
    ]
    assert [e.get("down_for") for e in sent] == [None, 5.0, 10.0, 20.0, 20.0, 10.0, None]
