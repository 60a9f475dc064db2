"""The sink seam: somewhere alert events go. A sink must not block the frame loop for long."""

from __future__ import annotations

from typing import Protocol

from edge_hf.alerts import Event


class Sink(Protocol):
    def emit(self, event: Event) -> None:
        """Deliver (or durably queue) one event."""

    def close(self) -> None:
        """Flush and release; called once at shutdown."""
