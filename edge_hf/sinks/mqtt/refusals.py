"""Messages the broker refused (an MQTT 5 PUBACK with a failure reason code) or that cannot fit
it: what becomes of them, and how that is made visible.

An alert the broker refuses for good - "Not authorized" (its ACL), "Topic Name invalid",
"Payload format invalid", "Packet too large" for an event, and the codes a broker may use for
anything else ("Unspecified error", "Implementation specific error") - would be refused again
on every retry until a person changes the broker, so retrying it only fills the spool and the
broker's log: it is set aside in the spool's table ``rejected`` (where a person can read it)
and the rest flow on. "Quota exceeded" and "Packet identifier in use" say "not now": the
message stays in the spool and is sent again after a pause. A snapshot that is refused is
dropped (its event goes on its own, and its file stays in ``--snapshot-dir``), except one
refused as too large, which is re-encoded smaller (``edge_hf.sinks.mqtt.fit``) and sent again.

Visible: every refusal is counted by reason (``edge_hf_mqtt_rejected_total{reason}``); one
line per topic says it (then at most one a minute, with the count); and while the latest message
on a topic was refused or skipped, the sink is degraded (``degraded`` in the stats and in
``/healthz``, 503), until a message on that topic is accepted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

log = logging.getLogger("edge_hf.mqtt")
REMIND = 60.0  # seconds between two lines about the same topic
QUOTA_EXCEEDED, PACKET_ID_IN_USE, PACKET_TOO_LARGE, NOT_AUTHORIZED = 0x97, 0x91, 0x95, 0x87
LATER = {QUOTA_EXCEEDED, PACKET_ID_IN_USE}  # "not now": sent again after a pause
SKIPPED = "over_maximum_packet_size"  # the reason counted for what cannot be made to fit
_HINTS = {
    NOT_AUTHORIZED: "check the broker's ACL for this client's user",
    PACKET_TOO_LARGE: "the broker's max_packet_size or message_size_limit is too small for it",
}


def reason_key(reason: str) -> str:
    """A metric label from a reason's name: ``Not authorized`` -> ``not_authorized``."""
    return "_".join(reason.lower().replace("-", " ").split()) or "unknown"


class Refusals:
    """Counts by reason, the topics whose latest message did not get through, rate-limited
    log lines. Written by the sink's worker; ``counts()`` and ``degraded()`` from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._failing: dict[str, str] = {}  # topic -> what happened to its latest message
        self._said: dict[str, tuple[float, int]] = {}  # topic -> (when said, untold since)

    def refused(self, topic: str, code: int, reason: str, fate: str) -> None:
        """The broker refused a message on ``topic`` (``code``, ``reason``); ``fate``: what
        became of it, for the log line."""
        hint = f"; {_HINTS[code]}" if code in _HINTS else ""
        what = f"refused by the broker: {reason}"
        self._note(topic, reason_key(reason), what, degrade=code not in LATER)
        self._say(
            logging.WARNING if code in LATER else logging.ERROR,
            topic,
            f"mqtt: the broker refused a message on {topic}: {reason} ({code:#04x}); {fate}{hint}",
        )

    def skipped(self, topic: str, size: int, limit: int, fate: str) -> None:
        """A ``size``-byte message on ``topic`` cannot be made to fit in ``limit`` bytes."""
        self._note(topic, SKIPPED, f"{size} bytes, over what the broker takes ({limit})")
        self._say(
            logging.WARNING,
            topic,
            f"mqtt: a message on {topic} of {size} bytes cannot be made to fit in the {limit} "
            f"bytes the broker takes, and is skipped; {fate}",
        )

    def accepted(self, topic: str) -> None:
        """A message on ``topic`` got through: not degraded, and the next refusal is said."""
        if topic in self._failing:
            with self._lock:
                self._failing.pop(topic, None)
            self._said.pop(topic, None)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def degraded(self) -> list[str]:
        with self._lock:
            return [f"{topic}: {what}" for topic, what in sorted(self._failing.items())]

    def _note(self, topic: str, key: str, what: str, degrade: bool = True) -> None:
        with self._lock:
            self._counts[key] += 1
            if degrade:
                self._failing[topic] = what

    def _say(self, level: int, topic: str, line: str) -> None:
        """The first line about ``topic``, then one a minute at most, with the untold count."""
        now = time.monotonic()
        when, untold = self._said.get(topic, (None, 0))
        if when is not None and now - when < REMIND:
            self._said[topic] = (when, untold + 1)
            return
        more = f" ({untold} more on this topic since the last line)" if untold else ""
        log.log(level, "%s%s", line, more)
        self._said[topic] = (now, 0)
