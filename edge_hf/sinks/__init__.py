"""Alert sinks: JSON lines on stdout, and MQTT with a durable spool (``edge_hf.sinks.mqtt``,
imported where it is used so that stdout-only runs do not load paho)."""

from edge_hf.sinks.base import RunInfo, Sink
from edge_hf.sinks.stdout import StdoutSink

__all__ = ["RunInfo", "Sink", "StdoutSink"]
