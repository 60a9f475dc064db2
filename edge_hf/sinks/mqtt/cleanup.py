"""``edge-hf mqtt-cleanup --config FILE``: remove this edge-hf's Home Assistant entities (empty
retained payloads on their discovery topics), e.g. before uninstalling or renaming cameras.
Connects once, with the settings ``run`` would use; exit 5 when the broker cannot be used."""

from __future__ import annotations

import sys
import threading

import paho.mqtt.client as mqtt

from edge_hf.errors import SinkError, UsageError
from edge_hf.sinks.mqtt import discovery
from edge_hf.sinks.mqtt.options import MqttOptions, tls_context

CONNECT_TIMEOUT = 10.0


def run(opts: MqttOptions | None) -> int:
    if opts is None:
        raise UsageError("mqtt-cleanup: no broker; give --mqtt URL or [mqtt] url in --config")
    client = _connect(opts)
    try:
        n = discovery.cleanup(client, opts.discovery_prefix, opts.prefix)
    finally:
        client.disconnect()
        client.loop_stop()
    node = discovery.node_id(opts.prefix)
    print(
        f"edge-hf: removed {n} Home Assistant entit{'y' if n == 1 else 'ies'} of node {node} "
        f"from {opts.display}",
        file=sys.stderr,
    )
    return 0


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
