"""The paho adapter: one MQTT connection, its reconnects and its log lines, behind a few methods.

The worker (``edge_hf.sinks.mqtt.sink``) never touches paho itself. This module owns the
client's set-up (credentials, TLS, last will, reconnect backoff, in-flight window), paho's
callbacks - each guarded, since an exception escaping one kills paho's network thread without a
word - and the connection counters. It tells the worker (``Hooks``) of every successful
connect, every PUBACK with its reason code, and every connection lost.

MQTT 5 first: its PUBACK says when the broker refused a message (an ACL, a size limit), and
its CONNACK says the largest packet the broker takes and how many messages it lets a client
have in flight. A broker without MQTT 5 answers the CONNECT with "unsupported protocol
version"; the link then says so once and speaks 3.1.1 to it for the rest of the run, in which
a broker acknowledges a message it refused like one it took, and never says its limits.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import ssl
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import paho.mqtt.client as mqtt

from edge_hf.sinks.mqtt.options import MqttOptions

log = logging.getLogger("edge_hf.mqtt")
_AUTH_CODES = {134, 135}  # Bad user name or password, Not authorized
_UNSUPPORTED_VERSION = 132  # CONNACK: the broker does not speak this protocol version


def guarded(fn):
    """An exception escaping a paho callback kills paho's network thread without a word (no more
    reconnects or PUBACKs, ever). Log it as the bug it is, and keep the thread alive."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            fn(*args, **kwargs)
        except Exception:
            log.exception("mqtt: bug in %s (carrying on)", fn.__name__)

    return wrapper


@dataclass(frozen=True)
class Hooks:
    """What the link tells the worker, each on paho's thread."""

    up: Callable[[], None]  # after every successful connect
    ack: Callable[[int, int, str], None]  # a PUBACK: mid, reason code (>= 0x80: refused), name
    down: Callable[[int, str], None]  # a connection lost (not closed by us): code, reason
    waiting: Callable[[], int]  # how many alerts are queued, for the log lines


class Link:
    def __init__(
        self,
        opts: MqttOptions,
        ctx: ssl.SSLContext | None,
        will: tuple[str, str],
        window: int,
        hooks: Hooks,
        listen: tuple[str, Callable[[str], None]] | None = None,
    ) -> None:
        """``will``: (topic, payload) of the retained last will; ``window``: messages in
        flight; ``listen``: a topic to subscribe to on every connect, and what to call with
        each payload (text)."""
        self.opts = opts
        self.connected = False
        self.closing = False  # a disconnect from now on is ours: no warning
        self.reconnects = 0  # successful connections after the first
        self.failed_attempts = 0  # since the last successful connection
        self.protocol = mqtt.MQTTv5
        self.max_packet: int | None = None  # the CONNACK's Maximum Packet Size (MQTT 5)
        self.receive_max = 65535  # the CONNACK's Receive Maximum (MQTT 5)
        self.needs_renew = False  # the broker has no MQTT 5: renew() with 3.1.1
        self._ever_connected = False
        self._hooks, self._listen = hooks, listen
        self._ctx, self._will, self._window = ctx, will, window
        self.client = self._client()

    @property
    def v5(self) -> bool:
        return self.protocol == mqtt.MQTTv5

    def _client(self) -> mqtt.Client:
        o, will = self.opts, self._will
        c = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=o.client_id,
            clean_session=None if self.v5 else True,  # MQTT 5: clean_start, in connect
            protocol=self.protocol,
        )
        if log.isEnabledFor(logging.DEBUG):  # paho is chatty, and logs shutdown noise as errors
            c.enable_logger(logging.getLogger("edge_hf.mqtt.paho"))
        if o.username:
            c.username_pw_set(o.username, o.password)
        if self._ctx is not None:
            c.tls_set_context(self._ctx)
        c.will_set(will[0], will[1], qos=1, retain=True)
        c.reconnect_delay_set(min(o.reconnect_min, o.reconnect_max), o.reconnect_max)
        c.max_inflight_messages_set(self._window)
        c.on_connect = self._on_connect
        c.on_connect_fail = self._on_connect_fail
        c.on_disconnect = self._on_disconnect
        c.on_publish = self._on_publish
        c.on_message = self._on_message
        return c

    # ------------------------------------------------------------------ what the worker uses

    def start(self) -> None:
        # MQTT 5: a clean start and no session expiry, as clean_session=True in 3.1.1
        clean = {"clean_start": True} if self.v5 else {}
        self.client.connect_async(self.opts.host, self.opts.port, self.opts.keepalive, **clean)
        self.client.loop_start()

    def renew(self) -> None:
        """Replace paho's client with a new one, connecting: whatever the old one held in flight
        (and would send first on its next connection) is forgotten, for the worker to send
        again from the spool. The worker's thread only; waits a second at most."""
        old, self.client = self.client, self._client()
        self.connected, self.needs_renew, self.max_packet = False, False, None
        with contextlib.suppress(Exception):
            old.disconnect()
        _join(old.loop_stop, 1.0)
        self.start()

    def publish(self, topic: str, payload, qos: int = 1, retain: bool = False) -> int:
        """Hand one message to paho; its mid. Raises ValueError/TypeError for a message paho
        refuses (now and forever)."""
        return self.client.publish(topic, payload, qos=qos, retain=retain).mid

    def publish_wait(self, topic: str, payload: str, timeout: float) -> None:
        """Publish (QoS 1, retained) and wait up to ``timeout`` for the broker to take it."""
        info = self.client.publish(topic, payload, qos=1, retain=True)
        with contextlib.suppress(RuntimeError, ValueError):  # else the last will says it
            info.wait_for_publish(max(0.05, timeout))

    def stop(self, timeout: float) -> None:
        """Disconnect and stop paho's thread, waiting at most ``timeout``."""
        self.closing = True
        self.client.disconnect()
        _join(self.client.loop_stop, max(0.1, timeout))

    def where(self) -> str:
        return f"{self.opts.host}:{self.opts.port}"

    # ------------------------------------------------------------------ paho callbacks
    # (each ignores a client that renew() has replaced)

    @guarded
    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if client is not self.client:
            return
        if reason_code.value == _UNSUPPORTED_VERSION and self.v5:
            self.protocol, self.needs_renew = mqtt.MQTTv311, True
            log.warning(
                "mqtt: %s does not speak MQTT 5; using MQTT 3.1.1, in which the broker cannot "
                "say that it refused a message (an ACL, a size limit): such a message is "
                "acknowledged and lost without a word, and a message over its maximum packet "
                "size costs the connection (docs/runtime.md)",
                self.where(),
            )
            return
        if reason_code.is_failure:
            self.failed_attempts += 1
            hint = (
                "; check the user in --mqtt and the password"
                if reason_code.value in _AUTH_CODES
                else ""
            )
            log.warning(
                "mqtt: %s refused the connection: %s%s (attempt %d; %d alert(s) spooled)",
                self.where(),
                reason_code,
                hint,
                self.failed_attempts,
                self._hooks.waiting(),
            )
            return
        if self._ever_connected:
            self.reconnects += 1
        self._limits(properties)
        log.info(
            "mqtt: connected to %s (MQTT %s%s)%s",
            self.where(),
            "5" if self.v5 else "3.1.1",
            f", packets up to {self.max_packet} bytes" if self.max_packet else "",
            f" after {self.failed_attempts} failed attempt(s)" if self.failed_attempts else "",
        )
        self._ever_connected, self.failed_attempts = True, 0
        self.connected = True
        if self._listen is not None:
            client.subscribe(self._listen[0], qos=1)
        self._hooks.up()

    def _limits(self, properties) -> None:
        """What an MQTT 5 CONNACK says the broker takes: the largest packet, and how many QoS 1
        messages it lets a client have in flight (mosquitto: 20; paho does not honour it, and
        cannot change its window on a connection, so the worker keeps its own under it)."""
        props = properties if self.v5 else None
        self.max_packet = getattr(props, "MaximumPacketSize", None)
        self.receive_max = getattr(props, "ReceiveMaximum", None) or 65535

    @guarded
    def _on_connect_fail(self, client, userdata) -> None:
        if client is not self.client:
            return
        # paho calls this from inside its `except OSError:` block, so the reason is at hand
        err = sys.exc_info()[1]
        self.failed_attempts += 1
        log.warning(
            "mqtt: cannot connect to %s (%s) (attempt %d; %d alert(s) spooled)",
            self.where(),
            err or "unknown error",
            self.failed_attempts,
            self._hooks.waiting(),
        )

    @guarded
    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if client is not self.client:
            return
        was, self.connected = self.connected, False
        if was and not self.closing:
            log.warning(
                "mqtt: lost the connection to %s (%s); alerts are spooled until it is back",
                self.where(),
                reason_code,
            )
            self._hooks.down(reason_code.value, str(reason_code))

    @guarded
    def _on_message(self, client, userdata, msg) -> None:
        if self._listen is not None and client is self.client:
            self._listen[1](msg.payload.decode("utf-8", "replace"))

    @guarded
    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        # a PUBACK for a QoS 1 message (or sent, for QoS 0); MQTT 3.1.1: always "Success"
        if client is self.client:
            self._hooks.ack(mid, reason_code.value, str(reason_code))


def _join(fn, timeout: float) -> None:
    """Run ``fn`` in a helper thread, waiting at most ``timeout``: paho's ``loop_stop`` joins
    its network thread without a timeout, and a connect in progress can take seconds."""
    t = threading.Thread(target=fn, name="mqtt-stop", daemon=True)
    t.start()
    t.join(timeout)
