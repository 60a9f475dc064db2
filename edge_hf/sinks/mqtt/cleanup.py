"""``edge-hf mqtt-cleanup --config FILE``: remove everything this edge-hf left retained on the
broker, e.g. before uninstalling or renaming cameras: its Home Assistant entities (discovery
configs under this node), then its state topics, snapshots and availability (everything retained
under its topic prefix, which is its own). Each is emptied with an empty retained payload and
named on stdout, one topic a line; the summary goes to stderr. Connects once, with the settings
``run`` would use; exit 5 when the broker cannot be used."""

from __future__ import annotations

import sys
import threading
import time

import paho.mqtt.client as mqtt

from edge_hf.errors import SinkError, UsageError
from edge_hf.sinks.mqtt import discovery
from edge_hf.sinks.mqtt.options import MqttOptions, tls_context

CONNECT_TIMEOUT = 10.0
QUIET = 1.0  # seconds without a retained message: the broker has sent them all
LIMIT = 10.0  # seconds at most spent collecting them


def run(opts: MqttOptions | None) -> int:
    if opts is None:
        raise UsageError("mqtt-cleanup: no broker; give --mqtt URL or [mqtt] url in --config")
    node = discovery.node_id(opts.prefix)
    patterns = (f"{opts.discovery_prefix}/+/{node}/+/config", f"{opts.prefix}/#")
    client = _connect(opts)
    try:
        found = retained_topics(client, patterns)
        entities = [t for t in found if t.startswith(f"{opts.discovery_prefix}/")]
        rest = [t for t in found if t not in entities]
        if found.get(f"{opts.prefix}/available") == b"online":
            print(
                f"edge-hf: warning: {opts.prefix}/available says online: an edge-hf running "
                f"with this prefix publishes its topics again; stop it first",
                file=sys.stderr,
            )
        clear(client, sorted(entities) + sorted(rest, key=_available_last))
    finally:
        client.disconnect()
        client.loop_stop()
    n = len(entities)
    print(
        f"edge-hf: removed {n} Home Assistant entit{'y' if n == 1 else 'ies'} of node {node} "
        f"and {len(rest)} retained topic(s) under {opts.prefix}/ from {opts.display}",
        file=sys.stderr,
    )
    return 0


def _available_last(topic: str) -> tuple[bool, str]:
    return topic.endswith("/available"), topic  # the entities go before they read unavailable


def retained_topics(client, patterns, quiet: float = QUIET, limit: float = LIMIT) -> dict:
    """{topic: payload} of every non-empty retained message matching ``patterns``, on a
    connected, looping paho ``client``: the broker sends them on subscribing, so collect
    until ``quiet`` seconds pass without one (at most ``limit``)."""
    found: dict[str, bytes] = {}
    last = [time.monotonic()]
    subscribed = threading.Event()

    def on_message(client, userdata, msg):
        if msg.retain and msg.payload:
            found[msg.topic] = bytes(msg.payload)
        last[0] = time.monotonic()

    client.on_message = on_message
    client.on_subscribe = lambda *a: subscribed.set()
    client.subscribe([(p, 1) for p in patterns])
    start = time.monotonic()
    subscribed.wait(limit)
    last[0] = max(last[0], time.monotonic())
    while time.monotonic() - last[0] < quiet and time.monotonic() - start < limit:
        time.sleep(0.05)
    client.unsubscribe(list(patterns))
    return found


def clear(client, topics) -> None:
    """Empty each retained topic (QoS 1, waiting for the broker), and name it on stdout."""
    for topic in topics:
        client.publish(topic, b"", qos=1, retain=True).wait_for_publish(5)
        print(topic, flush=True)


def _connect(opts: MqttOptions) -> mqtt.Client:
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2,
        client_id=f"{opts.client_id}-cleanup"[:64],
        clean_session=True,
        protocol=mqtt.MQTTv311,
    )
    if opts.username:
        client.username_pw_set(opts.username, opts.password)
    if opts.tls is not None:
        client.tls_set_context(tls_context(opts.tls))
    answer: list = []
    done = threading.Event()

    def on_connect(client, userdata, flags, reason_code, properties):
        answer.append(reason_code)
        done.set()

    client.on_connect = on_connect
    where = f"{opts.host}:{opts.port}"
    try:
        client.connect(opts.host, opts.port, opts.keepalive)
    except (OSError, ValueError) as e:
        raise SinkError(f"mqtt-cleanup: cannot connect to {where} ({e})") from None
    client.loop_start()
    if not done.wait(CONNECT_TIMEOUT) or answer[0].is_failure:
        client.loop_stop()
        why = answer[0] if answer else f"no answer in {CONNECT_TIMEOUT:g} s"
        raise SinkError(f"mqtt-cleanup: {where} refused the connection ({why})")
    return client
