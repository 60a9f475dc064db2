"""What the broker takes, as far as it has said or shown, and snapshots re-encoded to fit it.

A broker may cap what it accepts: mosquitto's ``max_packet_size`` closes the connection of a
client that sends a bigger packet (an MQTT 5 client is told the cap in the CONNACK, a 3.1.1
client never is), and ``message_size_limit`` drops a bigger payload (MQTT 5: a PUBACK saying
"Packet too large"; 3.1.1: a PUBACK like any other). An event is a few hundred bytes; a
snapshot is a small JPEG of some kilobytes, so a snapshot is what meets such a cap, and it is
re-encoded (lower quality, then smaller) to fit rather than sent to be refused:

- the CONNACK's Maximum Packet Size is the cap for every message on that connection;
- a snapshot refused as too large, or one in flight when a broker that announced no cap closed
  the connection, sets a ceiling for snapshots: half its size, but never below the largest
  snapshot the broker has acknowledged; and from then on snapshots wait until no alert is
  waiting or in flight (``wary``), so that a wrong guess costs a snapshot, never an alert;
- over MQTT 3.1.1, which never says a limit, snapshots wait for the alerts from the start.
"""

from __future__ import annotations

MIN_HEIGHT = 90  # pixels: a snapshot is not made smaller than this; it is skipped instead
QUALITIES = (80, 65, 50, 35, 20)  # JPEG qualities tried at each size, best first
STEP = 0.75  # each smaller size, as a fraction of the one before


def packet_size(topic: str, payload: int, v5: bool) -> int:
    """Bytes of a QoS 1 PUBLISH packet with a ``payload``-byte payload: fixed header,
    topic, packet id, (MQTT 5) an empty property list, payload."""
    rest = 2 + len(topic.encode()) + 2 + (1 if v5 else 0) + payload
    return 1 + _length_bytes(rest) + rest


def largest_payload(topic: str, max_packet: int, v5: bool) -> int:
    """The largest payload on ``topic`` whose packet is at most ``max_packet`` bytes."""
    n = max_packet - packet_size(topic, 0, v5)
    while n > 0 and packet_size(topic, n, v5) > max_packet:  # the length took more bytes
        n -= 1
    return max(n, 0)


def _length_bytes(n: int) -> int:
    """Bytes of MQTT's variable-length encoding of ``n``."""
    return 1 if n < 128 else 2 if n < 16_384 else 3 if n < 2_097_152 else 4


def shrink_jpeg(jpeg: bytes, limit: int) -> bytes | None:
    """The picture re-encoded in at most ``limit`` bytes: the qualities ``QUALITIES`` at its
    own size, then at each ``STEP`` smaller down to ``MIN_HEIGHT``; None when even that is too
    big, or ``jpeg`` is not a picture."""
    import cv2  # the device package's own dependency; only a sink that must shrink loads it
    import numpy as np

    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return None
    while True:
        for quality in QUALITIES:
            ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
            if ok and buf.size <= limit:
                return buf.tobytes()
        h, w = image.shape[:2]
        if round(h * STEP) < MIN_HEIGHT:
            return None
        size = (max(1, round(w * STEP)), round(h * STEP))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)


class Room:
    """What this broker takes (the worker's thread only, except reading for the stats)."""

    def __init__(self) -> None:
        self.max_packet: int | None = None  # this connection's CONNACK Maximum Packet Size
        self.v5 = True
        self.ceiling: int | None = None  # snapshot payloads above this were refused or lost
        self.proven = 0  # bytes: the largest snapshot payload the broker acknowledged
        self.wary = False  # a snapshot seems to have cost a connection: alerts go first

    def connected(self, max_packet: int | None, v5: bool) -> None:
        self.max_packet, self.v5 = max_packet, v5
        self.wary = self.wary or not v5  # MQTT 3.1.1 says nothing of limits: alerts first

    def limit(self, topic: str, snapshot: bool) -> int | None:
        """The largest payload that may go on ``topic``; None: no limit known."""
        limits = []
        if self.max_packet is not None:
            limits.append(largest_payload(topic, self.max_packet, self.v5))
        if snapshot and self.ceiling is not None:
            limits.append(self.ceiling)
        return min(limits) if limits else None

    def too_large(self, size: int, lost: bool = False) -> int:
        """A snapshot payload of ``size`` bytes was refused as too large, or was in flight when
        the connection was lost (``lost``): lower the ceiling and return it."""
        guess = max(self.proven, size // 2) if self.proven < size else size - 1
        self.ceiling = guess if self.ceiling is None else min(self.ceiling, guess)
        self.wary = self.wary or lost
        return self.ceiling

    def accepted(self, size: int) -> None:
        self.proven = max(self.proven, size)
