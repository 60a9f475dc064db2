"""Alert sinks, each one module of this package, all listed in ``SINKS`` by module name (see
``edge_hf.sinks.base`` for the protocol and what a sink receives). Table order is the order in
which sinks start, receive each event and close: MQTT first, so that an alert is on disk before
it goes anywhere else. Each module's ``SECTION`` says how its settings make the sink; it must not
import network libraries at module level (its ``create`` does)."""

from importlib import import_module

from edge_hf.sinks.base import RunInfo, Sink, SinkSection
from edge_hf.sinks.stdout import StdoutSink


def _sections(*modules: str) -> tuple[SinkSection, ...]:
    return tuple(import_module(f"edge_hf.sinks.{m}").SECTION for m in modules)


SINKS: tuple[SinkSection, ...] = _sections(
    "mqtt",
    "http",
    "stdout",
)

__all__ = ["SINKS", "RunInfo", "Sink", "SinkSection", "StdoutSink"]
