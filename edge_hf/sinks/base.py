"""The sink seam: somewhere alert events go, and what a sink may know about the run.

A sink is one module that declares a ``SinkSection`` (its flags and config keys, how they become
frozen options, how those make the sink) and one line (its module name) in
``edge_hf.sinks.SINKS``. The CLI and
the config code know sinks only through that table: ``edge_hf.config`` adds every section's
options to the settings table (same checks, same "unknown key ... did you mean" errors), builds
each section's options (``None``: that sink is off), and ``edge-hf run`` creates the sinks that
are on, in table order, which is also the order they start, receive events and close.

What a sink receives, and when (the runtime's side of the contract):

- ``start(run)`` once, before the first frame, after the model and cameras are known. ``run`` is
  a ``RunInfo``: the camera names (as in events), the alert classes *per camera* (today every
  camera has the model's classes; with several models they may differ), ``counters`` - a
  callable returning a frozen ``health.Counters`` snapshot, safe from any thread, cheap enough
  to call a few times a second (per camera: frames grabbed, hyperframes processed, dropped,
  reconnects, connected, and ``skipped``: (reason, count) pairs such as still/stale/busy for
  a runtime that skips hyperframes - the HTTP sink exports whatever reasons appear; inference
  count, p50/p95 latency and a latency histogram). New fields get defaults, so sinks that do
  not know them keep working - and ``health``, where a sink with a thread of its own registers a
  heartbeat (``health.loop(name)``) that the watchdog and ``/healthz`` watch. Raise
  ``SinkError``/``UsageError`` with the fix when it cannot be set up: sinks started before it
  are closed and the CLI exits with that error's code.
- ``emit(event)`` for every ``alerts.Event`` (an alert's start, its updates every few seconds
  while it is open, a down level's re-alarms, its end; ``event.key`` names the alert: its class,
  or ``<class>_down`` for the down level, which ``RunInfo.labels`` lists too), on the frame
  loop's thread: it must return quickly (queue, spool, or hand to a thread), never wait for
  the network, and must not raise for a transient failure.
- ``close()`` once at shutdown, after the last event (open alerts are ended first); it may take
  about a second to flush.
- ``status()`` (optional): a small JSON-ready dict about the sink itself (connected, queue
  depth...), read from any thread; ``RunInfo.statuses()`` gives every sink's, keyed by the
  sink's ``name`` attribute, to other sinks (the HTTP sink exports MQTT's as metrics). Its
  ``degraded`` (a list of lines, empty when all is well) says what the sink cannot do right
  now; ``/healthz`` answers 503 and names them while any is there.

Snapshots (``--snapshots``): a start or a re-alarm carries ``snapshot`` (the JPEG's file name,
written by the runtime before any sink sees the event) and ``small`` (a small JPEG, bytes);
sinks never see frame buffers. ``RunInfo.snapshots`` is the store, for serving the files, and
``RunInfo.latest_frame(camera)`` a copy of a camera's newest frame, made when called (the
status page's preview; None before the first frame).

Nothing here imports a network library: a section's ``create`` imports its sink's module, so a
run without MQTT never loads paho.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from edge_hf._values import Option
from edge_hf.alerts import Event
from edge_hf.health import Counters, Health


@dataclass(frozen=True)
class RunInfo:
    """What a sink may know about the run it serves."""

    cameras: tuple[str, ...]  # camera names, as in events
    labels: tuple[str, ...]  # every camera's alert keys (classes, ``<class>_down``), model order
    counters: Callable[[], Counters]  # a snapshot of the runtime's counters, any thread
    health: Health  # a sink with a loop of its own registers its heartbeat here
    camera_labels: Mapping[str, tuple[str, ...]] | None = None  # per camera; None: ``labels``
    statuses: Callable[[], dict[str, dict]] = dict  # every sink's status(), by its name
    snapshots: Any = None  # with --snapshots: the SnapshotStore (``.path(name)``), else None
    latest_frame: Callable[[str], Any] = lambda camera: None  # a copy of its newest frame (BGR)

    def labels_of(self, camera: str) -> tuple[str, ...]:
        """The alert classes a camera can raise."""
        if self.camera_labels is None:
            return self.labels
        return self.camera_labels.get(camera, ())


class Sink(Protocol):
    def start(self, run: RunInfo) -> None:
        """Connect or open; raise SinkError with a fix when it cannot be set up."""

    def emit(self, event: Event) -> None:
        """Deliver (or durably queue) one event."""

    def close(self) -> None:
        """Flush and release; called once at shutdown."""


def statuses(sinks) -> dict[str, dict]:
    """``{name: status()}`` of the sinks that have a ``status()`` (``name``: the sink's
    ``name`` attribute, else its class name)."""
    out = {}
    for sink in sinks:
        fn = getattr(sink, "status", None)
        if callable(fn):
            out[getattr(sink, "name", type(sink).__name__)] = fn()
    return out


def _nothing(opts: Any) -> None:
    return None


@dataclass(frozen=True)
class Command:
    """A subcommand a sink brings (``edge-hf NAME --config FILE``): it takes the run's flags and
    config file (cameras optional) and gets the section's options (None when the sink is off)."""

    name: str
    help: str
    run: Callable[[Any], int]  # options -> exit code; raises EdgeHFError for the user's errors


@dataclass(frozen=True)
class SinkSection:
    """A sink as the settings and the CLI see it: one entry of ``edge_hf.sinks.SINKS``."""

    name: str  # its key in Settings.sinks and in check-config's output
    options: tuple[Option, ...]  # its flags and config-file keys
    # resolved values {"section.key": value} -> frozen options, or None when the sink is off;
    # raises UsageError/SinkError naming the flag or key and the fix
    settings: Callable[[dict[str, Any]], Any]
    create: Callable[[Any], Sink]  # options -> a sink (import heavy libraries in here)
    check: Callable[[Any], None] = _nothing  # check-config: files etc., no network
    describe: Callable[[Any], dict | None] = _nothing  # check-config: JSON-ready, no secrets
    commands: tuple[Command, ...] = ()
