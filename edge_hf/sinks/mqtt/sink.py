"""The MQTT sink's worker: alerts that are never lost, plus availability, state and stats topics.

Topics under the prefix (``edge-hf`` unless the URL names one):

- ``<prefix>/available``        ``online``; ``stopped`` after a clean stop; ``offline``, the
  last will, after a crash or a cut cable. Retained.
- ``<prefix>/events``           one JSON object per event (an alert's start, its updates while
  open, a re-alarm, its end: ``edge_hf.alerts``), QoS 1, not retained.
- ``<prefix>/<camera>/<key>``   ``ON`` while the alert is open, else ``OFF``, retained (Home
  Assistant binary sensors); ``key`` is the class, or ``<class>_down`` for its down level.
- ``<prefix>/<camera>/<key>/snapshot``  with ``--snapshots``: the small JPEG of the latest
  start or re-alarm, retained, spooled just before its event (so published before it, and as
  durable).
- ``<prefix>/stats``            JSON every ``stats_interval`` seconds, QoS 0.
- ``homeassistant/…/config``    with ``discovery``: Home Assistant entities (``discovery.py``),
  sent on every connect and whenever ``homeassistant/status`` says ``online``.

Every event (with its snapshot, retained, just before it) is committed to the spool
(``edge_hf.sinks.mqtt.spool``) in ``emit`` - on the frame loop's thread, which waits for the
disk but never for the broker - and deleted when the broker's PUBACK for it arrives (paho's
``on_publish`` with its mid) and says it took it. A worker thread does all the publishing:
on every connect it republishes ``online`` and the states, then walks the spool oldest-first,
keeping at most ``WINDOW`` events in flight. paho's own queue is in memory only, so nothing is
handed to paho while disconnected except what was already in flight (paho resends that itself
on reconnect, with the same mid). paho's network thread dies silently if a callback raises, so
every callback is guarded; the worker survives anything too: a message paho refuses (a topic
too long, a spool row of the wrong type) is set aside by the spool, and any other exception is
logged (rate-limited), counted in the stats, and retried after a backoff - during which the
worker does not beat its heartbeat, so the watchdog stops vouching for a sink that is stuck.

What the broker refuses (an MQTT 5 PUBACK with a failure code) is set aside, sent again later
or re-encoded smaller, and always said, counted and reported as degraded
(``edge_hf.sinks.mqtt.refusals``). Nothing goes to paho bigger than the broker takes
(``edge_hf.sinks.mqtt.fit``): a snapshot is re-encoded to fit or skipped, so that no
snapshot can cost the connection and stand in front of the alerts behind it. A connection
lost just after a snapshot bigger than any the broker took was sent is taken as that
snapshot's doing (a broker need not say its limits): paho would send it first again on the
next connection, so the client is renewed (paho forgets it), and later snapshots are kept
smaller and wait for the alerts (over MQTT 3.1.1, which says no limits, they always wait).

paho itself is behind ``edge_hf.sinks.mqtt.link`` (the connection, its callbacks and log lines);
the spool is ``edge_hf.sinks.mqtt.spool``; the settings are ``edge_hf.sinks.mqtt`` (the section).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from datetime import datetime, timezone
from typing import NamedTuple

from edge_hf import __version__
from edge_hf.alerts import Event
from edge_hf.errors import UsageError
from edge_hf.health import RateMeter
from edge_hf.sinks.base import RunInfo
from edge_hf.sinks.mqtt import discovery
from edge_hf.sinks.mqtt.fit import Room, shrink_jpeg
from edge_hf.sinks.mqtt.link import Hooks, Link
from edge_hf.sinks.mqtt.options import MqttOptions, check_topic_level, tls_context
from edge_hf.sinks.mqtt.refusals import LATER, PACKET_TOO_LARGE, Refusals
from edge_hf.sinks.mqtt.spool import Spool, Spooled

log = logging.getLogger("edge_hf.mqtt")
WINDOW = 32  # events in flight (published, not yet acknowledged)
TICK = 0.5  # the worker's longest sleep: its heartbeat, and how stale a stats time may be
CLOSE_BUDGET = 1.0  # seconds close() may spend flushing and saying "stopped"
ERROR_BACKOFF_MAX = 30.0  # seconds between retries of a worker step that keeps failing
MAX_TOPIC = 65535  # bytes: MQTT's limit on a topic name
LATER_PAUSE = 1.0  # seconds before sending again what the broker said "not now" to
SUSPECT = 2.0  # seconds: a connection lost this soon after a snapshot was sent is its doing
# seconds before a refused state is sent again: a state may not change for days (a down level),
# and until one gets through, health stays degraded after the broker's ACL is fixed
RESTATE = 10.0
SNAPSHOT_FATE = "its event goes on its own (the file stays in --snapshot-dir)"


class Flight(NamedTuple):
    """A QoS 1 message handed to paho, until its PUBACK."""

    spool_id: int  # 0: not spooled (availability, a state, a config, a restated snapshot)
    topic: str
    size: int  # payload bytes, as sent
    snapshot: bool
    at: float  # time.monotonic() when handed to paho


class MqttSink:
    name = "mqtt"

    def __init__(self, opts: MqttOptions) -> None:
        self.opts = opts
        p = opts.prefix
        self.t_available, self.t_events, self.t_stats = (
            f"{p}/available",
            f"{p}/events",
            f"{p}/stats",
        )
        self.spool: Spool | None = None
        self.link: Link | None = None
        self._fresh = False  # connected again: announce before anything else
        self._discover = False  # Home Assistant asked for the discovery configs again
        self._configs: list[tuple[str, str]] = []  # Home Assistant discovery (topic, payload)
        self._wake, self._stop = threading.Event(), threading.Event()
        self._acks: deque[tuple[int, int, str]] = deque()  # (mid, code, reason), from paho
        self._inflight: dict[int, Flight] = {}  # mid -> a spooled message; worker thread only
        self._unspooled: dict[int, Flight] = {}  # mid -> any other QoS 1 message
        self._held: list[Spooled] = []  # snapshots waiting for the alerts (``Room.wary``)
        self._cursor = 0  # highest spool id handed to paho on this connection
        self._lost: tuple[int, str] | None = None  # a connection lost (its reason), from paho
        self._pause_until = 0.0  # the broker said "not now": no spooled message before this
        self.room, self.refusals = Room(), Refusals()
        self._shrink_said = 0  # the last snapshot limit a log line was said for
        self.errors = 0  # worker steps that raised
        self._failing = 0  # consecutive worker steps that raised
        self._last_error = ("", 0.0)  # what the last logged error said, and when
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], str] = {}
        self._dirty: set[tuple[str, str]] = set()
        self._state_keys: dict[str, tuple[str, str]] = {}  # a state's topic -> its key
        self._restate: set[tuple[str, str]] = set()  # refused states, sent again at ...
        self._restate_at = 0.0  # ... this time (worker thread only)
        self._snapshots: dict[tuple[str, str], bytes] = {}  # the latest small JPEG per state
        self._thread: threading.Thread | None = None
        self._next_stats = 0.0

    # ------------------------------------------------------------------ the Sink protocol

    def start(self, run: RunInfo) -> None:
        for cam in run.cameras:
            try:
                check_topic_level(cam, "camera name")
            except UsageError as e:
                raise UsageError(f"{e}; name the camera with --camera NAME=SOURCE") from None
        for label in run.labels:
            check_topic_level(label, "alert class")
        self._check_topic_length(run)
        listen = None
        if self.opts.discovery:
            where = self.opts.discovery_prefix
            self._configs = discovery.configs(
                where, self.opts.prefix, run.cameras, run.labels_of, run.snapshots is not None
            )
            listen = (f"{where}/{discovery.STATUS}", self._on_ha_status)
        ctx = tls_context(self.opts.tls) if self.opts.tls else None
        if self.opts.tls and self.opts.tls.insecure:
            log.warning(
                "mqtt: --mqtt-tls-insecure: the broker's host name is NOT checked against its "
                "certificate (the chain still is); anyone with a certificate from that CA can "
                "pose as the broker"
            )
        self.spool = Spool(self.opts.state_dir, self.opts.spool)
        if self.spool.depth:
            log.info(
                "mqtt: %d alert(s) from an earlier run are waiting in the spool", self.spool.depth
            )
        self.run, self.meter = run, RateMeter()
        self.meter.report(run.counters())
        self._next_stats = time.monotonic() + self.opts.stats_interval
        with self._lock:
            for cam in run.cameras:
                for label in run.labels_of(cam):
                    self._states[(cam, label)] = "OFF"  # a killed run may have left ON behind
        self.heartbeat = run.health.loop("mqtt sink")
        hooks = Hooks(self._on_up, self._on_ack, self._on_down, lambda: self.spool.depth)
        self.link = Link(
            self.opts, ctx, (self.t_available, "offline"), WINDOW, hooks, listen=listen
        )
        log.info(
            "mqtt: %s as %s; spool %s", self.opts.display, self.opts.client_id, self.spool.path
        )
        self.link.start()
        self._thread = threading.Thread(target=self._work, name="mqtt-sink", daemon=True)
        self._thread.start()

    def _check_topic_length(self, run: RunInfo) -> None:
        longest = max(len(c.encode()) for c in run.cameras) if run.cameras else 0
        labels = max((len(x.encode()) for x in run.labels), default=0)
        n = len(self.opts.prefix.encode()) + longest + labels + 2
        if n > MAX_TOPIC:
            raise UsageError(
                f"a camera name of {longest} bytes makes MQTT state topics of {n} bytes, over "
                f"MQTT's limit of {MAX_TOPIC}; name the camera with --camera NAME=SOURCE"
            )

    def emit(self, event: Event) -> None:
        key = (event.camera, event.key)
        if event.small is not None:  # a start's or a re-alarm's
            # spooled before its event, so published before it, on every connection
            topic = f"{self.opts.prefix}/{event.camera}/{event.key}/snapshot"
            self.spool.put(topic, event.small, retain=True)
            with self._lock:
                self._snapshots[key] = event.small  # restated on every connect
        payload = json.dumps(event.to_dict(), separators=(",", ":")).encode()
        self.spool.put(self.t_events, payload)  # the disk refused: it waits in memory, in order
        if event.kind in ("start", "end"):  # ON exactly while the alert is open
            with self._lock:
                self._states[key] = "ON" if event.kind == "start" else "OFF"
                self._dirty.add(key)
        self._wake.set()

    def close(self) -> None:
        """Stop the worker, flush what the broker will take within ``CLOSE_BUDGET``, publish
        ``stopped`` (retained) and disconnect. Whatever is not acknowledged stays spooled."""
        if self.link is None:  # never started, or start() failed part-way
            if self.spool is not None:
                self.spool.close()
            return
        deadline = time.monotonic() + CLOSE_BUDGET
        self.link.closing = True
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(TICK)
        self.heartbeat.retire()
        while self._connected and time.monotonic() < deadline - 0.3 and self._busy():
            try:
                self._step(stats=False)
            except Exception as e:  # what is not acknowledged stays spooled
                self._step_failed(e)
                break
            time.sleep(0.01)
        if self._connected:
            self.link.publish_wait(self.t_available, "stopped", deadline - time.monotonic())
        self.link.stop(deadline - time.monotonic())
        self._settle_acks()
        left = self.spool.depth
        self.spool.close()
        if left:
            log.info("mqtt: %d alert(s) stay in the spool for the next run", left)

    # ------------------------------------------------------------------ from the link

    @property
    def _connected(self) -> bool:
        return self.link is not None and self.link.connected

    def _on_up(self) -> None:  # paho's thread
        self._fresh = True
        self._wake.set()

    def _on_ha_status(self, payload: str) -> None:  # paho's thread
        if payload == "online":  # Home Assistant (re)started and forgot its entities
            self._discover = True
            self._wake.set()

    def _on_ack(self, mid: int, code: int, reason: str) -> None:  # paho's thread
        self._acks.append((mid, code, reason))
        self._wake.set()

    def _on_down(self, code: int, reason: str) -> None:  # paho's thread
        self._lost = (code, reason)
        self._wake.set()

    # ------------------------------------------------------------------ the worker

    def _work(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(TICK)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self._step(stats=True)
            except Exception as e:  # a bug or a failing disk: say so, back off, try again
                self._step_failed(e)
                self._stop.wait(self._error_backoff())
                continue
            if self._failing:
                log.warning(
                    "mqtt: the sink is working again after %d failed step(s)", self._failing
                )
                self._failing = 0
            self.heartbeat.beat()  # only after a step that worked: the watchdog's evidence

    def _error_backoff(self) -> float:
        return min(TICK * 2 ** min(self._failing, 16), ERROR_BACKOFF_MAX)

    def _step_failed(self, e: Exception) -> None:
        self.errors += 1
        self._failing += 1
        what, now = f"{type(e).__name__}: {e}", time.monotonic()
        said, when = self._last_error
        if what != said or now - when >= 60.0:  # a new error, or a reminder once a minute
            self._last_error = (what, now)
            log.error(
                "mqtt: the sink failed (%s); alerts stay spooled, retrying in %.3g s "
                "(%d error(s) so far)",
                what,
                self._error_backoff(),
                self.errors,
                exc_info=what != said,  # the traceback once: it may be a bug to report
            )

    def _step(self, stats: bool) -> None:
        self._settle_acks()
        if self._lost is not None:
            (code, reason), self._lost = self._lost, None
            self._after_loss(code, reason)
        if self.link.needs_renew:  # the broker has no MQTT 5
            self._renew()
        if not self._connected:
            return
        if self._fresh:
            self._fresh = False
            self._announce()
        if self._discover:
            self._discover = False
            self._publish_configs()
        if self._restate and time.monotonic() >= self._restate_at:
            with self._lock:
                self._dirty |= self._restate
            self._restate.clear()
        self._publish_states()
        self._publish_spooled()
        if stats and time.monotonic() >= self._next_stats:
            self._next_stats = time.monotonic() + self.opts.stats_interval
            msg = Spooled(0, self.t_stats, json.dumps(self.stats()).encode())
            payload = self._fit(msg, snapshot=False)
            if payload is not None:
                self.link.publish(self.t_stats, payload, qos=0)

    def _announce(self) -> None:
        """A new connection: learn what the broker takes, describe ourselves to Home
        Assistant (if asked to), say we are here, restate every state and snapshot (a broker
        without persistence forgot them), replay the spool."""
        self.room.connected(self.link.max_packet, self.link.v5)
        self._publish_configs()
        self._send(Spooled(0, self.t_available, b"online", True))
        with self._lock:
            self._dirty.update(self._states)
            snapshots = sorted(self._snapshots.items())
        p = self.opts.prefix
        self._held = []
        for (camera, label), jpeg in snapshots:
            msg = Spooled(0, f"{p}/{camera}/{label}/snapshot", jpeg, True)
            if self.room.wary:
                self._held.append(msg)
            else:
                self._send(msg, snapshot=True)
        self._cursor = 0

    def _publish_configs(self) -> None:
        for topic, payload in self._configs:
            self._send(Spooled(0, topic, payload.encode(), True))

    def _publish_states(self) -> None:
        with self._lock:
            changed = [(k, self._states[k]) for k in sorted(self._dirty)]
            self._dirty.clear()
        p = self.opts.prefix
        for (camera, label), value in changed:
            topic = f"{p}/{camera}/{label}"
            self._state_keys[topic] = (camera, label)
            self._send(Spooled(0, topic, value.encode(), True))

    def _publish_spooled(self) -> None:
        """Hand paho the spooled messages after the cursor, oldest first, at most ``WINDOW``
        in flight (fewer if the broker says so); when snapshots wait for the alerts, one of
        them once no alert is waiting or in flight."""
        if time.monotonic() < self._pause_until:
            return
        free = min(WINDOW, self.link.receive_max) - len(self._inflight)
        while free > 0:
            rows = self.spool.pending(self._cursor, free)
            if not rows:
                break
            busy = {f.spool_id for f in self._inflight.values()}  # paho resends those itself
            for row in rows:
                self._cursor = row.id
                if row.id in busy:
                    continue
                if row.retain and self.room.wary:  # a snapshot: after the alerts
                    if all(h.id != row.id for h in self._held):
                        self._held.append(row)
                    continue
                if self._send(row, snapshot=row.retain):
                    free -= 1
        if self._held and not self._inflight and not self.spool.pending(self._cursor, 1):
            msg = self._held.pop(0)
            self._send(msg, snapshot=True)

    def _send(self, msg: Spooled, snapshot: bool = False) -> bool:
        """Hand one QoS 1 message to paho (``msg.id`` 0: not spooled), fitted to what the
        broker takes; False when it was not sent (it cannot fit, or paho refuses it)."""
        payload = self._fit(msg, snapshot)
        if payload is None:
            return False
        try:
            mid = self.link.publish(msg.topic, payload, qos=1, retain=msg.retain)
        except (ValueError, TypeError) as e:  # paho refuses it, now and forever
            if not msg.id:
                raise
            self.spool.reject(msg.id, f"{type(e).__name__}: {e}")
            return False
        flight = Flight(msg.id, msg.topic, len(payload), snapshot, time.monotonic())
        (self._inflight if msg.id else self._unspooled)[mid] = flight
        return True

    def _fit(self, msg: Spooled, snapshot: bool) -> bytes | None:
        """The payload as the broker will take it: itself, a snapshot re-encoded smaller, or
        None (said, counted, and set aside if spooled) when it cannot fit."""
        limit = self.room.limit(msg.topic, snapshot)
        if limit is None or len(msg.payload) <= limit:
            return msg.payload
        small = shrink_jpeg(msg.payload, limit) if snapshot else None
        if small is not None:
            if limit != self._shrink_said:
                self._shrink_said = limit
                log.info(
                    "mqtt: snapshots are re-encoded to fit in %d bytes, what the broker takes "
                    "(this one: %d -> %d bytes)",
                    limit,
                    len(msg.payload),
                    len(small),
                )
            return small
        fate = SNAPSHOT_FATE if snapshot else "the alert is set aside in the table 'rejected'"
        self.refusals.skipped(msg.topic, len(msg.payload), limit, fate if msg.id else "not sent")
        if msg.id:
            self._set_aside(
                msg.id, snapshot, f"{len(msg.payload)} bytes, over the {limit} the broker takes"
            )
        return None

    def _set_aside(self, spool_id: int, snapshot: bool, reason: str) -> None:
        """An event goes to the table ``rejected``; a snapshot is dropped (its file stays)."""
        if snapshot:
            self.spool.delete([spool_id])
        else:
            self.spool.reject(spool_id, reason, say=False)

    def _settle_acks(self) -> None:
        done = []
        while self._acks:
            mid, code, reason = self._acks.popleft()
            f = self._inflight.pop(mid, None) or self._unspooled.pop(mid, None)
            if f is None:
                continue
            if code < 0x80:  # success, or "No matching subscribers"
                self.refusals.accepted(f.topic)
                if f.snapshot:
                    self.room.accepted(f.size)
                if f.spool_id:
                    done.append(f.spool_id)
            else:
                self._refused(f, code, reason)
        if done:
            self.spool.delete(done)

    def _refused(self, f: Flight, code: int, reason: str) -> None:
        """The broker refused ``f``: send it again after a pause ("not now"), smaller (a
        snapshot too large), or never (set aside); say so either way (``Refusals``)."""
        again = True
        if code in LATER:
            self._pause_until = time.monotonic() + LATER_PAUSE
            fate = "it is sent again shortly"
        elif f.snapshot and code == PACKET_TOO_LARGE:
            ceiling = self.room.too_large(f.size)
            fate = f"snapshots are re-encoded to at most {ceiling} bytes from now on"
        else:
            again = False
            fate = SNAPSHOT_FATE if f.snapshot else "the alert is set aside in the table 'rejected'"
            if f.spool_id:
                self._set_aside(f.spool_id, f.snapshot, f"refused by the broker: {reason}")
        if f.topic in self._state_keys:  # a state: sent again soon, and when it next changes
            self._restate.add(self._state_keys[f.topic])
            self._restate_at = time.monotonic() + RESTATE
            fate = f"it is sent again in {RESTATE:g} s and with the next change or connection"
        elif not f.spool_id:  # a config, availability: sent again on the next connection
            fate = "it is sent again with the next change or connection"
        elif again:
            self._cursor = min(self._cursor, f.spool_id - 1)
        self.refusals.refused(f.topic, code, reason, fate)

    def _after_loss(self, code: int, reason: str) -> None:
        """A connection lost just after a snapshot bigger than any the broker took was sent
        (or with "Packet too large") was probably lost to that snapshot: a broker closes the
        connection of a client that sends a packet over its ``max_packet_size`` (and an MQTT
        3.1.1 client is never told that limit), and paho closes it itself on mosquitto's
        answer to a payload over ``message_size_limit`` (a PUBACK code MQTT 5 reserves for
        other packets). paho would send the snapshot first again on the next connection, and
        lose that one too: lower the snapshot ceiling, let alerts go first from now on, and
        renew paho's client so that it forgets the snapshot (the spool keeps the rest)."""
        now = time.monotonic()
        sent = [*self._inflight.values(), *self._unspooled.values()]
        suspects = [
            f.size
            for f in sent
            if f.snapshot
            and f.size > self.room.proven
            and (code == PACKET_TOO_LARGE or now - f.at < SUSPECT)
        ]
        if not suspects:
            return  # paho sends what was in flight again on the next connection
        ceiling = self.room.too_large(max(suspects), lost=True)
        log.warning(
            "mqtt: the connection was lost (%s) just after a snapshot of %d bytes was sent: the "
            "broker may take no message that big (its max_packet_size or message_size_limit, "
            "which it does not always announce); snapshots are re-encoded to at most %d bytes, "
            "and wait for the alerts, from now on",
            reason,
            max(suspects),
            ceiling,
        )
        self._renew()

    def _renew(self) -> None:
        """A new paho client: what the old one held in flight is sent again from the spool."""
        self.link.renew()
        self._inflight.clear()
        self._unspooled.clear()
        self._acks.clear()
        self._held, self._cursor = [], 0

    def _busy(self) -> bool:
        return bool(self.spool.depth or self._inflight or self._dirty)

    def status(self) -> dict:
        """The sink's own state (the ``spool`` and ``mqtt`` parts of the stats)."""
        if self.link is None:  # not started
            return {}
        return {
            "spool": {
                "depth": self.spool.depth,
                "bytes": self.spool.size,
                "dropped": self.spool.dropped,
                "in_memory": self.spool.in_memory,
                "rejected": self.spool.rejected,
            },
            "mqtt": {
                "connected": self._connected,
                "protocol": "5" if self.link.v5 else "3.1.1",
                "max_packet_size": self.link.max_packet,
                "reconnects": self.link.reconnects,
                "failed_attempts": self.link.failed_attempts,
                "errors": self.errors,
                "rejected": self.refusals.counts(),
            },
            "degraded": self.refusals.degraded(),
        }

    def stats(self) -> dict:
        """The ``<prefix>/stats`` payload."""
        s = self.meter.report(self.run.counters())
        now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        return {"time": now, "version": __version__, **s, **self.status()}
