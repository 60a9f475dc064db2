"""Talking to systemd (``Type=notify``, ``WatchdogSec=``) with plain datagrams, no libsystemd.

- ``READY=1`` once the model is loaded, the sinks are up and every camera's capture has started,
  and then as soon as any camera delivers a frame, or every camera's first open has ended
  (opened or failed, so at most --open-timeout), whichever comes first. A camera that hangs
  does not hold READY back while another works; with none working the service is still up,
  retrying them, and STATUS names them;
- ``STATUS=…`` with frame and inference rates, and the cameras that are down, every
  ``STATUS_EVERY`` seconds;
- ``WATCHDOG=1`` every half ``WATCHDOG_USEC`` - but only while the loops that matter go round
  within the last ``WATCHDOG_USEC``: inference, each sink's worker (MQTT), and at least one
  camera's capture (``Health.stuck``). A thread that merely exists proves nothing; a stuck one
  stops the pings, and systemd restarts the service. A camera that is down does not: a restart
  cannot bring it back, and would stop the cameras that work;
- ``STOPPING=1`` as soon as a stop begins.

Without ``$NOTIFY_SOCKET`` (not under systemd) none of this runs.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping

from edge_hf.health import Counters, Health, RateMeter

log = logging.getLogger("edge_hf.notify")
STATUS_EVERY = 10.0  # seconds


class Notifier:
    """One AF_UNIX datagram per message to ``address`` (``@name``: the abstract namespace)."""

    def __init__(self, address: str, watchdog: float | None = None) -> None:
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog = watchdog  # seconds (WATCHDOG_USEC), or None: no watchdog wanted
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self._warned = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Notifier | None:
        address = env.get("NOTIFY_SOCKET")
        if not address:
            return None
        return cls(address, watchdog_interval(env))

    def send(self, *fields: str) -> bool:
        try:
            self._sock.sendto("\n".join(fields).encode(), self.address)
            return True
        except OSError as e:
            if not self._warned:  # once: systemd gone away is not worth a line per ping
                log.warning("cannot notify systemd at %s: %s", self.address.lstrip("\0"), e)
                self._warned = True
            return False

    def close(self) -> None:
        self._sock.close()


def watchdog_interval(env: Mapping[str, str]) -> float | None:
    """``WATCHDOG_USEC`` in seconds, if it is meant for this process (``WATCHDOG_PID``)."""
    usec, pid = env.get("WATCHDOG_USEC"), env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        seconds = int(usec) / 1e6
    except ValueError:
        log.warning("WATCHDOG_USEC=%r is not a number of microseconds; no watchdog", usec)
        return None
    return seconds if seconds > 0 else None


class Watchdog(threading.Thread):
    def __init__(
        self,
        notifier: Notifier,
        health: Health,
        counters: Callable[[], Counters],
        ready: Callable[[], bool],
        stop: threading.Event,
    ) -> None:
        super().__init__(name="sd-notify", daemon=True)
        self.notifier, self.health, self.counters = notifier, health, counters
        self.ready, self.stop = ready, stop
        self.pings = 0
        self.withheld = 0  # pings not sent because a loop was stuck
        self._meter = RateMeter()
        self._stuck: list[str] = []

    def run(self) -> None:
        n = self.notifier
        try:
            if self._wait_ready():
                n.send("READY=1", f"STATUS={self._status()}")
                self._serve()
        finally:
            n.send("STOPPING=1", "STATUS=stopping")

    def _wait_ready(self) -> bool:
        self._meter.report(self.counters())
        self.notifier.send("STATUS=model loaded; waiting for a first frame or every camera's open")
        while not self.stop.wait(0.05):
            if self.ready():
                return True
        return False

    def _serve(self) -> None:
        interval = self.notifier.watchdog
        period = min(interval / 2, STATUS_EVERY) if interval else STATUS_EVERY
        since_status = 0.0
        while not self.stop.wait(period):
            since_status += period
            if interval:
                self._check(interval)
            if since_status >= STATUS_EVERY:
                since_status = 0.0
                self.notifier.send(f"STATUS={self._status()}")

    def _check(self, interval: float) -> None:
        stuck = self.health.stuck(interval)
        if not stuck:
            if self._stuck:
                log.warning("watchdog: all loops going again")
            self._stuck = []
            self.notifier.send("WATCHDOG=1")
            self.pings += 1
            return
        self.withheld += 1
        if stuck != self._stuck:  # once per episode, not once per missed ping
            log.error(
                "watchdog: no progress for %.3g s in: %s; not telling systemd we are alive",
                interval,
                ", ".join(stuck),
            )
            self.notifier.send(f"STATUS=stuck: {', '.join(stuck)}")
        self._stuck = stuck

    def _status(self) -> str:
        """The cameras with frames and their rates, the model's p95, then the cameras down by
        name (one line for 16 of them, not 16 lines of zeros)."""
        r = self._meter.report(self.counters())
        cams = r["cameras"].items()
        parts = [
            f"{name} {c['fps']:.1f} fps, {c['processed_fps']:.1f} inferences/s"
            for name, c in cams
            if c["connected"]
        ]
        parts.append(f"inference p95 {r['inference']['p95_ms']:.2f} ms")
        if down := [name for name, c in cams if not c["connected"]]:
            parts.append(f"{len(down)} down: {', '.join(down)}")
        return "; ".join(parts)
