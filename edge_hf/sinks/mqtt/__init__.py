"""The MQTT sink as the settings see it: its flags and config keys (``[mqtt]``, ``[spool]``), how
they become ``MqttOptions``, and how those make the sink. paho is imported only by ``create``.

    discovery.py  Home Assistant discovery configs; cleanup.py  ``edge-hf mqtt-cleanup``
    link.py     the paho adapter (connection, callbacks, reconnects, log lines; MQTT 5, or 3.1.1)
    sink.py     the publish/ack worker (spool -> broker, states, stats)
    refusals.py what the broker refused: set aside, sent again, said, counted, degraded
    fit.py      what the broker takes: packet sizes, snapshots re-encoded to fit
    spool.py    the durable outbox (SQLite), with _spool_files.py
    options.py  the URL, password and TLS checks
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from edge_hf._values import Option, boolean, max_bytes, max_rows, path, reconnect_max, text
from edge_hf._values import stats_interval as stats_interval_check
from edge_hf.errors import UsageError
from edge_hf.redact import mask_url
from edge_hf.sinks.base import Command, Sink, SinkSection
from edge_hf.sinks.mqtt.options import (
    MqttOptions,
    TlsFiles,
    check_topic_level,
    default_client_id,
    default_state_dir,
    parse_url,
    read_password,
    tls_context,
)
from edge_hf.sinks.mqtt.spool import SpoolLimits

# fmt: off
OPTIONS: tuple[Option, ...] = (
    # key                    flag                   check         default  help                                                               action    metavar
    Option("mqtt.url",       "--mqtt",              text,         None,    "publish alerts to mqtt://[user@]host[:port][/prefix] (mqtts:// for TLS)", metavar="URL"),
    Option("mqtt.password_file", "--mqtt-password-file", path,    None,    "read the MQTT password from this file (else $EDGE_HF_MQTT_PASSWORD, else the systemd credential mqtt-password)"),
    Option("mqtt.ca",        "--mqtt-ca",           path,         None,    "mqtts: CA bundle (PEM) to trust instead of the system's"),
    Option("mqtt.cert",      "--mqtt-cert",         path,         None,    "mqtts: client certificate (PEM)"),
    Option("mqtt.key",       "--mqtt-key",          path,         None,    "mqtts: client key (PEM), if not in --mqtt-cert"),
    Option("mqtt.tls_insecure", "--mqtt-tls-insecure", boolean,   False,   "mqtts: do not check the broker's host name (the certificate chain is still verified)", "bool"),
    Option("mqtt.client_id", "--mqtt-client-id",    text,         None,    "MQTT client id (default: edge-hf-HOSTNAME-PREFIX)"),
    Option("mqtt.stats_interval", "--stats-interval", stats_interval_check, 60.0, "seconds between <prefix>/stats messages"),
    Option("mqtt.reconnect_max", "--mqtt-reconnect-max", reconnect_max, 30.0,   "longest wait between attempts to reach the broker (from 1 s, doubling)"),
    Option("mqtt.discovery", "--mqtt-discovery",    boolean,      False,   "publish Home Assistant discovery configs (a device per camera; docs/runtime.md)", "bool"),
    Option("mqtt.discovery_prefix", "--mqtt-discovery-prefix", text, "homeassistant", "Home Assistant's discovery prefix"),
    Option("spool.dir",      "--state-dir",         path,         None,    "where the alert spool lives (default: $STATE_DIRECTORY, else ~/.local/state/edge-hf)"),
    Option("spool.max_rows", "--spool-max-rows",    max_rows,     10_000,  "alerts kept while the broker is unreachable; the oldest go first"),
    Option("spool.max_bytes", "--spool-max-bytes",  max_bytes,    16 * 1024 * 1024, "bytes of alerts kept while the broker is unreachable"),
)
# fmt: on
_TLS_KEYS = ("mqtt.ca", "mqtt.cert", "mqtt.key", "mqtt.tls_insecure")


def settings(v: dict[str, Any]) -> MqttOptions | None:
    """Frozen options from resolved values (None without --mqtt); reads the password."""
    if v["mqtt.url"] is None:
        given = [k for k in (*_TLS_KEYS, "mqtt.password_file") if v[k]]
        if given:
            flag = next(o.flag for o in OPTIONS if o.key == given[0])
            raise UsageError(f"{flag} ({given[0]}) is set but there is no broker; add --mqtt URL")
        return None
    url = parse_url(v["mqtt.url"])
    check_topic_level(
        v["mqtt.discovery_prefix"], "--mqtt-discovery-prefix (mqtt.discovery_prefix)", levels=True
    )
    if not url.tls and any(v[k] for k in _TLS_KEYS):
        raise UsageError(f"{mask_url(v['mqtt.url'])}: TLS options need an mqtts:// URL")
    tls = (
        TlsFiles(v["mqtt.ca"], v["mqtt.cert"], v["mqtt.key"], v["mqtt.tls_insecure"])
        if url.tls
        else None
    )
    return MqttOptions(
        host=url.host,
        port=url.port,
        prefix=url.prefix,
        username=url.username,
        password=read_password(url.username, v["mqtt.password_file"]),
        tls=tls,
        client_id=v["mqtt.client_id"] or default_client_id(url.prefix),
        stats_interval=v["mqtt.stats_interval"],
        reconnect_max=v["mqtt.reconnect_max"],
        state_dir=v["spool.dir"] or default_state_dir(),
        spool=SpoolLimits(max_rows=v["spool.max_rows"], max_bytes=v["spool.max_bytes"]),
        discovery=v["mqtt.discovery"],
        discovery_prefix=v["mqtt.discovery_prefix"],
    )


def create(opts: MqttOptions) -> Sink:
    from edge_hf.sinks.mqtt.sink import MqttSink  # paho, only when MQTT is on

    return MqttSink(opts)


def check(opts: MqttOptions) -> None:
    if opts.tls is not None:
        tls_context(opts.tls)


def describe(opts: MqttOptions) -> dict:
    return {**asdict(opts), "url": opts.display, "password": "set" if opts.password else None}


def cleanup(opts: MqttOptions | None) -> int:
    from edge_hf.sinks.mqtt.cleanup import run

    return run(opts)


CLEANUP = Command(
    "mqtt-cleanup",
    "remove what this edge-hf retained on the broker (Home Assistant entities, states, "
    "snapshots, availability)",
    cleanup,
)
SECTION = SinkSection("mqtt", OPTIONS, settings, create, check, describe, (CLEANUP,))
