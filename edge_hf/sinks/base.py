"""The sink seam: somewhere alert events go. A sink must not block the frame loop for long.

``start`` is called once the model and cameras are known (before the first frame), ``emit``
from the frame loop for every event, ``close`` once at shutdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from edge_hf.alerts import Event
from edge_hf.health import Counters, Health


@dataclass(frozen=True)
class RunInfo:
    """What a sink may know about the run it serves."""

    cameras: tuple[str, ...]  # camera names, as in events
    labels: tuple[str, ...]  # the alert classes
    counters: Callable[[], Counters]  # a snapshot of the runtime's counters, any thread
    health: Health  # a sink with a loop of its own registers its heartbeat here


class Sink(Protocol):
    def start(self, run: RunInfo) -> None:
        """Connect or open; raise SinkError with a fix when it cannot be set up."""

    def emit(self, event: Event) -> None:
        """Deliver (or durably queue) one event."""

    def close(self) -> None:
        """Flush and release; called once at shutdown."""
