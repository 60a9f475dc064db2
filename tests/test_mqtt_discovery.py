"""Home Assistant MQTT discovery against a real mosquitto: the configs Home Assistant reads,
their unique ids across restarts, the re-send on ``homeassistant/status``, three-state
availability, and ``edge-hf mqtt-cleanup`` as a user runs it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from edge_hf.alerts import Event
from edge_hf.errors import UsageError
from edge_hf.health import Counters, Health
from edge_hf.sinks import RunInfo
from edge_hf.sinks.mqtt.options import MqttOptions
from edge_hf.sinks.mqtt.sink import MqttSink
from tests.broker import Mosquitto, Subscriber, have_mosquitto, retained
from tests.conftest import run_cli
from tests.live import free_port, wait_until

pytestmark = pytest.mark.skipif(not have_mosquitto(), reason="needs mosquitto (scripts/setup.sh)")

CAMERAS, LABELS = ("porch", "back yard"), ("fall", "fight")
# what Home Assistant's MQTT schemas require, or what we promise (README)
COMMON = {"name", "unique_id", "object_id", "state_topic", "availability", "device"}
BINARY = COMMON | {"payload_on", "payload_off", "device_class"}
SENSOR = COMMON | {"value_template", "unit_of_measurement", "entity_category", "state_class"}


def info() -> RunInfo:
    counters = lambda: Counters(time.monotonic(), (), 0, 0.0, 0.0)  # noqa: E731
    return RunInfo(CAMERAS, LABELS, counters, Health())


def sink(broker: Mosquitto, state: Path) -> MqttSink:
    opts = MqttOptions(
        host="127.0.0.1", port=broker.port, prefix="site/a", state_dir=state, discovery=True
    )
    return MqttSink(opts)


def configs(sub: Subscriber) -> dict[str, dict]:
    """The latest non-empty config per discovery topic."""
    out = {}
    for m in sub.messages():
        if m.topic.startswith("homeassistant/") and m.topic.endswith("/config") and m.payload:
            out[m.topic] = json.loads(m.payload)
    return out


def n_configs(sub: Subscriber) -> int:
    return sum(1 for m in sub.messages() if m.topic.endswith("/config") and m.payload)


EXPECTED = len(CAMERAS) * (len(LABELS) + 2)  # a binary sensor per class, fps, inference ms
EXPECTED_WITH_IMAGES = EXPECTED + len(CAMERAS) * len(LABELS)  # and an image per class


def test_discovery_configs_are_complete_stable_and_resent_when_home_assistant_starts(tmp_path):
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        first = sink(broker, tmp_path)
        first.start(info())
        try:
            assert wait_until(lambda: len(configs(sub)) == EXPECTED, 10)
            seen = configs(sub)
            for topic, c in seen.items():
                component, node, obj, _ = topic.split("/")[1:]
                assert node == "site_a" and c["unique_id"] == f"site_a_{obj}"
                assert set(c) >= (BINARY if component == "binary_sensor" else SENSOR), topic
                (avail,) = c["availability"]
                assert avail["topic"] == "site/a/available"
                assert {avail["payload_available"], avail["payload_not_available"]} == {
                    "online",
                    "offline",
                }
                assert c["device"]["identifiers"] and c["device"]["name"] in CAMERAS
            fall = seen["homeassistant/binary_sensor/site_a/back_yard_fall/config"]
            assert fall["state_topic"] == "site/a/back yard/fall"
            assert fall["device_class"] == "safety"
            assert (fall["payload_on"], fall["payload_off"]) == ("ON", "OFF")
            fps = seen["homeassistant/sensor/site_a/porch_fps/config"]
            assert fps["state_topic"] == "site/a/stats" and "porch" in fps["value_template"]
            assert fps["entity_category"] == "diagnostic"
            # Home Assistant restarts: it says so, and gets every config again
            before = n_configs(sub)
            sub.client.publish("homeassistant/status", "online", qos=1)
            assert wait_until(lambda: n_configs(sub) == before + EXPECTED, 10)
        finally:
            first.close()
        assert retained(broker.port, "site/a/available") == "stopped"
        again = sink(broker, tmp_path)  # a restart: the same entities, not new ones
        again.start(info())
        try:
            assert wait_until(lambda: n_configs(sub) >= before + 2 * EXPECTED, 10)
            assert configs(sub) == seen
        finally:
            again.close()


def test_availability_reads_stopped_after_a_clean_stop_and_offline_after_a_cut(tmp_path):
    with Mosquitto() as broker, Subscriber(broker.port, "site/a/available") as sub:
        s = sink(broker, tmp_path)
        s.start(info())
        assert wait_until(lambda: sub.payloads("site/a/available") == ["online"], 10)
        s.close()
        assert wait_until(lambda: sub.payloads("site/a/available")[-1:] == ["stopped"], 5)
        s = sink(broker, tmp_path)
        s.start(info())
        try:
            assert wait_until(lambda: sub.payloads("site/a/available")[-1:] == ["online"], 10)
            s.link.client._sock.close()  # the cable is cut: the broker sends the last will
            assert wait_until(lambda: "offline" in sub.payloads("site/a/available"), 10)
        finally:
            s.close()


def retained_for_node(port: int, node: str = "site_a", prefix: str = "site/a/") -> list[str]:
    """Topics a fresh subscriber to the prefix and to homeassistant/# gets retained for the
    node. The broker sends retained messages right after the SUBACK, in one burst: a
    foreign retained topic (set by the test) is the sign the burst has been read."""
    with Subscriber(port, "#") as sub:
        assert wait_until(lambda: sub.messages(FOREIGN), 5)
        time.sleep(0.3)  # the rest of the burst
        return sorted(
            m.topic
            for m in sub.messages()
            if m.retain and m.raw and (m.topic.startswith(prefix) or f"/{node}/" in m.topic)
        )


FOREIGN = "homeassistant/binary_sensor/site_b/porch_fall/config"  # another edge-hf's


def test_mqtt_cleanup_removes_everything_the_node_retained_and_nothing_else(tmp_path: Path):
    with Mosquitto() as broker:
        s = sink(broker, tmp_path / "state")
        run = info()
        s.start(RunInfo(run.cameras, run.labels, run.counters, run.health, snapshots=object()))
        s.emit(Event("start", "e1", "porch", "fall", 0.9, 0.9, 1, time.time(), small=b"jpeg"))
        with Subscriber(broker.port) as sub:
            sub.client.publish(FOREIGN, "{}", qos=1, retain=True)
            sub.client.publish("site/b/available", "online", qos=1, retain=True)
            assert wait_until(lambda: len(configs(sub)) == EXPECTED_WITH_IMAGES + 1, 10)
            assert wait_until(lambda: sub.messages("site/a/porch/fall/snapshot"), 10)
            assert wait_until(lambda: s.spool.depth == 0, 10)
        s.close()
        before = retained_for_node(broker.port)
        # 4 states per camera, the snapshot, availability
        assert len(before) == EXPECTED_WITH_IMAGES + 4 + 1 + 1, before
        assert "site/a/porch/fall/snapshot" in before and "site/a/available" in before
        config = tmp_path / "edge-hf.toml"
        config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}/site/a"\n')
        r = run_cli("mqtt-cleanup", "--config", str(config), timeout=60)
        assert r.returncode == 0, r.stderr
        assert (
            f"removed {EXPECTED_WITH_IMAGES} Home Assistant entities of node site_a and 6 "
            "retained topic(s) under site/a/" in r.stderr
        )
        assert sorted(r.stdout.splitlines()) == before  # it names what it removed
        assert r.stdout.splitlines()[-1] == "site/a/available"  # the entities went first
        assert retained_for_node(broker.port) == []
        assert retained(broker.port, FOREIGN) == "{}"  # not ours to remove
        assert retained(broker.port, "site/b/available") == "online"
        r = run_cli("mqtt-cleanup", "--config", str(config), timeout=60)
        assert r.returncode == 0 and r.stdout == ""
        assert "removed 0 Home Assistant entities of node site_a and 0 retained" in r.stderr


def test_mqtt_cleanup_without_a_broker_is_one_line_and_exit_2(tmp_path: Path):
    r = run_cli("mqtt-cleanup", timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "edge-hf: error: mqtt-cleanup: no broker; give --mqtt URL or [mqtt] url in --config"
    )


def test_camera_names_that_would_share_a_device_are_refused_at_start(tmp_path: Path):
    s = MqttSink(MqttOptions(host="127.0.0.1", port=1, state_dir=tmp_path, discovery=True))
    info = RunInfo(("back yard", "back_yard"), ("fall",), lambda: None, Health())
    with pytest.raises(UsageError, match="cameras 'back yard' and 'back_yard' would be the same"):
        s.start(info)
    s.close()


def test_mqtt_cleanup_with_no_broker_listening_is_one_line_and_exit_5(tmp_path: Path):
    r = run_cli("mqtt-cleanup", "--mqtt", f"mqtt://127.0.0.1:{free_port()}", timeout=60)
    assert r.returncode == 5, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("edge-hf: error: mqtt-cleanup: cannot connect to 127.0.0.1:")


def test_a_fall_has_a_down_entity_that_is_on_while_its_person_stays_down(tmp_path: Path):
    # the demo figure lies 2-4 s after each fall; --down-for 2 escalates every one of them
    with Mosquitto() as broker, Subscriber(broker.port) as sub:
        r = run_cli(
            *("run", "--camera", "synth://demo?frames=900", "--fast", "--down-for", "2"),
            *("--mqtt", broker.url, "--mqtt-discovery", "--state-dir", str(tmp_path)),
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert wait_until(lambda: retained(broker.port, "edge-hf/available") == "stopped", 10)
        down = configs(sub)["homeassistant/binary_sensor/edge-hf/demo_fall_down/config"]
        assert down["state_topic"] == "edge-hf/demo/fall_down" and down["name"] == "fall_down"
        assert down["unique_id"] == "edge-hf_demo_fall_down" and down["device_class"] == "safety"
        assert "ON" in sub.payloads("edge-hf/demo/fall_down")
        assert retained(broker.port, "edge-hf/demo/fall_down") == "OFF"  # they got up
    printed = [json.loads(line) for line in r.stdout.splitlines()]
    sent = [json.loads(p) for p in sub.payloads("edge-hf/events")]
    assert sent == printed
    levels = [(e["event"], e["level"]) for e in sent if e["event"] != "update"]
    # each fall: its alert, then the down level once 2 s down, which ends first
    assert levels == [("start", "fast"), ("start", "down"), ("end", "down"), ("end", "fast")] * 2
    assert all(e["down_for"] >= 2.0 for e in sent if e["level"] == "down")
