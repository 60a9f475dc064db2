"""Alert sinks, each one module, all listed in ``SINKS`` (see ``edge_hf.sinks.base`` for the
protocol and what a sink receives). Table order is the order in which sinks start, receive each
event and close: MQTT first, so that an alert is on disk before it goes anywhere else."""

from edge_hf.sinks import http, mqtt, stdout
from edge_hf.sinks.base import RunInfo, Sink, SinkSection
from edge_hf.sinks.stdout import StdoutSink

SINKS: tuple[SinkSection, ...] = (
    mqtt.SECTION,
    http.SECTION,
    stdout.SECTION,
)

__all__ = ["SINKS", "RunInfo", "Sink", "SinkSection", "StdoutSink"]
