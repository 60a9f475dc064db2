"""One JSON object per line on stdout, flushed per event, for pipes and journald. Always on."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from edge_hf.alerts import Event
from edge_hf.sinks.base import RunInfo, SinkSection


class StdoutSink:
    name = "stdout"

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stdout

    def start(self, run: RunInfo) -> None:
        pass

    def emit(self, event: Event) -> None:
        self._stream.write(json.dumps(event.to_dict()) + "\n")
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()


def _on(values: dict[str, Any]) -> bool:
    return True


SECTION = SinkSection("stdout", (), _on, lambda _: StdoutSink())
