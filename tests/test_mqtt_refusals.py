"""What the broker will not take: a real ``edge-hf run`` subprocess, a real mosquitto with an
ACL file, ``message_size_limit`` or ``max_packet_size``, a real paho subscriber.

Every alert printed on stdout must end up delivered to the subscriber, set aside in the spool's
table ``rejected`` (with an ERROR line, a metric and health saying so), or still in the spool:
never acknowledged into nothing. An oversized snapshot must never stand in front of an alert.
Each test prints what it measured: events printed on stdout, delivered, set aside.
"""

from __future__ import annotations

import json
import logging
import signal
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path

import cv2
import numpy as np
import pytest

from edge_hf.sinks.mqtt import refusals
from edge_hf.sinks.mqtt.spool import Spool
from tests.broker import Mosquitto, Subscriber, V311Only, have_mosquitto
from tests.conftest import EdgeHF
from tests.live import free_port, wait_until
from tests.test_mqtt import delivered, ids, spooled

pytestmark = pytest.mark.skipif(
    not have_mosquitto(), reason="needs mosquitto and mosquitto_passwd (scripts/setup.sh)"
)

PW = "pw-acl-test"
SNAPSHOT = "edge-hf/demo/fall/snapshot"


def run_edge(tmp: Path, url: str, *extra: str, snapshots: bool = False, env=None) -> EdgeHF:
    # 960x540: the small JPEG (480x270) of a synthetic frame is about 6.8 KB
    camera = "demo=synth://demo?size=960x540" if snapshots else "demo=synth://demo"
    return EdgeHF(
        tmp,
        "run",
        "--camera",
        camera,
        "--fast",
        "--cooldown",
        "0",
        *(["--snapshots"] if snapshots else []),
        "--mqtt",
        url,
        "--state-dir",
        str(tmp / "state"),
        "--stats-interval",
        "1",
        "--mqtt-reconnect-max",
        "1",
        *extra,
        env=env,
    )


def set_aside(state: Path) -> list[str]:
    """Event identities in the spool's table ``rejected``."""
    with sqlite3.connect(state / Spool.FILENAME) as db:
        rows = db.execute(
            "SELECT payload FROM rejected WHERE topic = 'edge-hf/events' ORDER BY id"
        ).fetchall()
    return ids(json.loads(p) for (p,) in rows)


def get_json(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.loads(r.read())


def healthz(port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def metric(port: int, sample: str) -> float:
    """The value of one sample (``name{labels}``) of ``/metrics``; 0 when absent."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(sample + " "):
                return float(line.split()[-1])
    return 0.0


def once(got: list[str]) -> list[str]:
    """Each identity at its first delivery: at least once means maybe twice, after a lost
    connection (a subscriber deduplicates on the id)."""
    return list(dict.fromkeys(got))


def lines_with(text: str, *needles: str) -> list[str]:
    return [ln for ln in text.splitlines() if all(n in ln for n in needles)]


def report(what: str, run: EdgeHF, got, aside=()) -> None:
    printed, twice = run.events(), len(got) - len(once(got))
    lost = len(lines_with(run.stderr(), "lost the connection"))
    print(
        f"\n{what}: {len(printed)} events printed, {len(once(got))} delivered "
        f"({twice} of them twice), {len(aside)} set aside, {lost} lost connection(s)"
    )


def test_publishes_the_acl_denies_are_set_aside_logged_counted_and_degrade_health(tmp_path):
    """MQTT 3.1.1 acknowledges a denied QoS 1 publish like any other, so the spool used to
    delete each denied alert: 8 printed, 0 delivered, nothing logged. MQTT 5's PUBACK says
    "Not authorized": the alert goes to ``rejected`` (it would be denied again until the
    operator fixes the ACL), one ERROR line per topic, a metric, /healthz 503 - until the
    ACL is fixed, when alerts flow again and health recovers."""
    users = {"edge": PW, "watcher": PW}
    deny = {"edge": ("write edge-hf/available",), "watcher": ("read #",)}
    http = free_port()
    with (
        Mosquitto(users=users, acl=deny) as broker,
        Subscriber(broker.port, auth=("watcher", PW)) as sub,
    ):
        url = f"mqtt://edge@127.0.0.1:{broker.port}"
        env = {"EDGE_HF_MQTT_PASSWORD": PW}
        with run_edge(tmp_path, url, "--http", str(http), env=env) as run:
            t0 = time.monotonic()
            state = tmp_path / "state"
            assert wait_until(lambda: len(set_aside(state)) >= 8, 60), run.stderr()
            denied = set_aside(state)
            assert denied == ids(run.events())[: len(denied)]  # the oldest alerts, in order
            sample = 'edge_hf_mqtt_rejected_total{reason="not_authorized"}'
            assert metric(http, sample) >= 8  # the events, and the state topic's ON/OFF
            code, body = healthz(http)
            assert code == 503 and not body["ok"], body
            assert any("edge-hf/events" in d for d in body["degraded"]["mqtt"]), body
            status = get_json(http, "/api/status")["sinks"]["mqtt"]  # as in <prefix>/stats
            assert "edge-hf/events: refused by the broker: Not authorized" in status["degraded"]
            assert status["mqtt"]["protocol"] == "5" and status["mqtt"]["rejected"]
            assert not delivered(sub)
            # the operator fixes the ACL: alerts flow again, health recovers
            broker.set_acl({"edge": ("write edge-hf/#",), "watcher": ("read #",)})
            broker.reload()
            assert wait_until(lambda: len(delivered(sub)) >= 4, 30), run.stderr()
            assert wait_until(lambda: healthz(http)[0] == 200, 10), healthz(http)
            assert run.signal(signal.SIGTERM) == 0
            minutes = (time.monotonic() - t0) / 60
    printed, got = ids(run.events()), delivered(sub)
    aside, left = set_aside(tmp_path / "state"), spooled(tmp_path / "state")
    report("ACL", run, got, aside)
    assert set(denied) <= set(aside)
    assert set(printed) == set(got) | set(aside) | set(left)  # none acknowledged into nothing
    assert not set(got) & set(aside)
    err = run.stderr()
    refused = lines_with(err, "ERROR", "edge-hf/events", "Not authorized")
    assert 1 <= len(refused) <= 1 + minutes, refused  # a line per topic (a minute), not per alert
    assert lines_with(err, "ERROR", "edge-hf/demo/fall", "Not authorized")  # the state topic
    assert "Traceback" not in err


def test_a_snapshot_over_message_size_limit_is_sent_again_smaller(tmp_path: Path):
    """A broker's ``message_size_limit`` drops a bigger payload; over MQTT 3.1.1 it still
    acknowledges it, and the snapshot vanished. Over MQTT 5 mosquitto 2.0 answers with "Packet
    too large" in a PUBACK, where MQTT 5 does not allow that code, and paho closes the
    connection as a protocol error: the snapshot just sent takes the blame, is re-encoded
    smaller and sent again, and every event arrives."""
    limit = 4096
    with (
        Mosquitto(message_size_limit=limit) as broker,
        Subscriber(broker.port) as sub,
        run_edge(tmp_path, broker.url, snapshots=True) as run,
    ):
        assert wait_until(lambda: sub.messages(SNAPSHOT), 60), run.stderr()
        assert wait_until(lambda: len(run.events()) >= 10, 60)
        assert run.signal(signal.SIGTERM) == 0
    printed, got = ids(run.events()), delivered(sub)
    report(f"message_size_limit {limit}", run, got)
    assert once(got) == printed
    for m in sub.messages(SNAPSHOT):
        assert len(m.raw) <= limit
        assert cv2.imdecode(np.frombuffer(m.raw, np.uint8), cv2.IMREAD_COLOR) is not None
    err = run.stderr()
    assert len(lines_with(err, "lost the connection")) <= 1, err  # the first snapshot's
    assert lines_with(err, "WARNING", "just after a snapshot of", "re-encoded to at most")


@pytest.mark.parametrize("limit", [4096, 700])
def test_a_snapshot_over_max_packet_size_never_stands_in_front_of_an_alert(tmp_path, limit):
    """A broker closes the connection on a packet over its ``max_packet_size``; the snapshot
    used to be sent again first on every reconnect (39 reconnects in 40 s, 0 of 26 events
    delivered). MQTT 5's CONNACK says the limit: a snapshot is re-encoded to fit it (4096),
    or skipped with one log line when it cannot be (700), and every event arrives."""
    with (
        Mosquitto(max_packet_size=limit) as broker,
        Subscriber(broker.port) as sub,
        run_edge(tmp_path, broker.url, snapshots=True) as run,
    ):
        assert wait_until(lambda: len(run.events()) >= 20, 60), run.stderr()
        assert run.signal(signal.SIGTERM) == 0
    printed, got = ids(run.events()), delivered(sub)
    report(f"max_packet_size {limit}", run, got)
    assert got == printed  # never a lost connection, so not even a duplicate
    err = run.stderr()
    assert "lost the connection" not in err
    snaps = sub.messages(SNAPSHOT)
    if limit == 4096:
        assert snaps and all(len(m.raw) < limit for m in snaps)
    else:
        assert not snaps
        skipped = lines_with(err, SNAPSHOT, "skipped")
        assert len(skipped) == 1, skipped  # one line, not one per alert


def test_a_broker_without_mqtt_5_gets_3_1_1_and_no_oversized_snapshot_blocks_alerts(tmp_path):
    """A broker that refuses MQTT 5 is spoken to in 3.1.1, which says nothing of refusals or
    of a maximum packet size: the connection it closes while a snapshot was in flight is the
    only sign. Alerts go first from then on, the snapshot is re-encoded smaller, and every
    event arrives after at most a couple of reconnects."""
    limit = 4096
    with (
        Mosquitto(max_packet_size=limit) as broker,
        V311Only(broker.port) as old,
        Subscriber(broker.port) as sub,
        run_edge(tmp_path, old.url, snapshots=True) as run,
    ):
        assert wait_until(lambda: len(run.events()) >= 20, 60), run.stderr()
        assert wait_until(lambda: sub.messages(SNAPSHOT), 30), run.stderr()
        assert run.signal(signal.SIGTERM) == 0
    printed, got = ids(run.events()), delivered(sub)
    report(f"MQTT 3.1.1, max_packet_size {limit}", run, got)
    assert old.refused_v5 >= 1
    err = run.stderr()
    assert lines_with(err, "WARNING", "MQTT 3.1.1")
    assert once(got) == printed
    assert len(lines_with(err, "lost the connection")) <= 3, err
    assert all(len(m.raw) < limit for m in sub.messages(SNAPSHOT))


def test_refusals_are_counted_each_and_said_once_a_minute_per_topic(caplog, monkeypatch):
    caplog.set_level(logging.INFO, "edge_hf.mqtt")
    now = [1000.0]
    monkeypatch.setattr(refusals.time, "monotonic", lambda: now[0])
    r = refusals.Refusals()
    for _ in range(100):
        r.refused("p/events", 0x87, "Not authorized", "set aside")
    r.refused("p/cam/fall", 0x87, "Not authorized", "sent again with the next change")
    r.refused("p/events", 0x97, "Quota exceeded", "sent again shortly")  # within the minute: untold
    assert r.counts() == {"not_authorized": 101, "quota_exceeded": 1}
    assert r.degraded() == [
        "p/cam/fall: refused by the broker: Not authorized",
        "p/events: refused by the broker: Not authorized",
    ]
    now[0] += refusals.REMIND
    r.refused("p/events", 0x87, "Not authorized", "set aside")
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 3 and "check the broker's ACL" in lines[0]
    assert lines[2].endswith("(100 more on this topic since the last line)")
    r.accepted("p/events")  # the ACL was fixed
    assert r.degraded() == ["p/cam/fall: refused by the broker: Not authorized"]
    r.skipped("p/events", 9000, 700, "not sent")  # a new trouble is said at once
    assert len(caplog.records) == 4 and "9000 bytes cannot be made to fit" in caplog.text
