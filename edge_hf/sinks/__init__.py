"""Alert sinks: stdout now; MQTT joins the same protocol."""

from edge_hf.sinks.base import Sink
from edge_hf.sinks.stdout import StdoutSink

__all__ = ["Sink", "StdoutSink"]
