"""The paho adapter: one MQTT connection, its reconnects and its log lines, behind a few methods.

The worker (``edge_hf.sinks.mqtt.sink``) never touches paho itself. This module owns the
client's set-up (credentials, TLS, last will, reconnect backoff, in-flight window), paho's
callbacks - each guarded, since an exception escaping one kills paho's network thread without a
word - and the connection counters. It tells the worker two things: ``on_up()`` after every
successful connect, and ``on_ack(mid)`` for every PUBACK (paho's ``on_publish``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import ssl
import sys
import threading
from collections.abc import Callable

import paho.mqtt.client as mqtt

from edge_hf.sinks.mqtt.options import MqttOptions

log = logging.getLogger("edge_hf.mqtt")
_AUTH_CODES = {134, 135}  # Bad user name or password, Not authorized


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


class Link:
    def __init__(
        self,
        opts: MqttOptions,
        ctx: ssl.SSLContext | None,
        will: tuple[str, str],
        window: int,
        on_up: Callable[[], None],
        on_ack: Callable[[int], None],
        waiting: Callable[[], int],
        listen: tuple[str, Callable[[str], None]] | None = None,
    ) -> None:
        """``will``: (topic, payload) of the retained last will; ``window``: messages in
        flight; ``waiting()``: how many alerts are queued, for the log lines; ``listen``: a
        topic to subscribe to on every connect, and what to call with each payload (text)."""
        self.opts = opts
        self.connected = False
        self.closing = False  # a disconnect from now on is ours: no warning
        self.reconnects = 0  # successful connections after the first
        self.failed_attempts = 0  # since the last successful connection
        self._ever_connected = False
        self._on_up, self._on_ack, self._waiting = on_up, on_ack, waiting
        self._listen = listen
        self.client = self._client(ctx, will, window)

    def _client(self, ctx, will: tuple[str, str], window: int) -> mqtt.Client:
        o = self.opts
        c = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=o.client_id,
            clean_session=True,
            protocol=mqtt.MQTTv311,
        )
        if log.isEnabledFor(logging.DEBUG):  # paho is chatty, and logs shutdown noise as errors
            c.enable_logger(logging.getLogger("edge_hf.mqtt.paho"))
        if o.username:
            c.username_pw_set(o.username, o.password)
        if ctx is not None:
            c.tls_set_context(ctx)
        c.will_set(will[0], will[1], qos=1, retain=True)
        c.reconnect_delay_set(min(o.reconnect_min, o.reconnect_max), o.reconnect_max)
        c.max_inflight_messages_set(window)
        c.on_connect = self._on_connect
        c.on_connect_fail = self._on_connect_fail
        c.on_disconnect = self._on_disconnect
        c.on_publish = self._on_publish
        c.on_message = self._on_message
        return c

    # ------------------------------------------------------------------ what the worker uses

    def start(self) -> None:
        self.client.connect_async(self.opts.host, self.opts.port, self.opts.keepalive)
        self.client.loop_start()

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

    @guarded
    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
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
                self._waiting(),
            )
            return
        if self._ever_connected:
            self.reconnects += 1
        log.info(
            "mqtt: connected to %s%s",
            self.where(),
            f" after {self.failed_attempts} failed attempt(s)" if self.failed_attempts else "",
        )
        self._ever_connected, self.failed_attempts = True, 0
        self.connected = True
        if self._listen is not None:
            client.subscribe(self._listen[0], qos=1)
        self._on_up()

    @guarded
    def _on_connect_fail(self, client, userdata) -> None:
        # paho calls this from inside its `except OSError:` block, so the reason is at hand
        err = sys.exc_info()[1]
        self.failed_attempts += 1
        log.warning(
            "mqtt: cannot connect to %s (%s) (attempt %d; %d alert(s) spooled)",
            self.where(),
            err or "unknown error",
            self.failed_attempts,
            self._waiting(),
        )

    @guarded
    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        was, self.connected = self.connected, False
        if was and not self.closing:
            log.warning(
                "mqtt: lost the connection to %s (%s); alerts are spooled until it is back",
                self.where(),
                reason_code,
            )

    @guarded
    def _on_message(self, client, userdata, msg) -> None:
        if self._listen is not None:
            self._listen[1](msg.payload.decode("utf-8", "replace"))

    @guarded
    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        self._on_ack(mid)  # PUBACK for a QoS 1 message (or sent, for QoS 0)


def _join(fn, timeout: float) -> None:
    """Run ``fn`` in a helper thread, waiting at most ``timeout``: paho's ``loop_stop`` joins
    its network thread without a timeout, and a connect in progress can take seconds."""
    t = threading.Thread(target=fn, name="mqtt-stop", daemon=True)
    t.start()
    t.join(timeout)
