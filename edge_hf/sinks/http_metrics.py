"""The Prometheus metrics of ``/metrics``: read at scrape time from the runtime's counters
snapshot and the other sinks' ``status()``, so that nobody scraping costs nothing.

Names (all prefixed ``edge_hf_``); per camera, label ``camera``:

    camera_frames_total, camera_hyperframes_processed_total, camera_hyperframes_dropped_total,
    camera_reconnects_total, camera_hyperframes_skipped_total{camera,reason},
    camera_snapshots_late_total (snapshots whose own frame was gone) (counters);
    camera_connected (0/1); camera_fps,
    camera_processed_fps (gauges: averages since the previous scrape)
    inference_seconds (histogram), alerts_total{camera,label} (alert starts)
    spool_depth, spool_dropped_total, mqtt_connected, mqtt_rejected_total{reason} (messages
    the broker refused, or that could not be made to fit it), mqtt_degraded (with --mqtt)
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from edge_hf.health import LATENCY_BUCKETS, Counters, RateMeter

P = "edge_hf_"


class Collector:
    def __init__(
        self,
        counters: Callable[[], Counters],
        statuses: Callable[[], dict[str, dict]],
        alerts: Callable[[], dict[tuple[str, str], int]],
    ) -> None:
        self._counters, self._statuses, self._alerts = counters, statuses, alerts
        self._meter = RateMeter()
        self._lock = threading.Lock()  # two scrapes at once share one meter

    def collect(self):
        c = self._counters()
        with self._lock:
            rates = self._meter.report(c)["cameras"]
        yield from self._cameras(c, rates)
        yield self._latency(c)
        alerts = CounterMetricFamily(
            P + "alerts", "alerts started", labels=["camera", "label"]
        )  # _total is added by the library
        for (camera, label), n in sorted(self._alerts().items()):
            alerts.add_metric([camera, label], n)
        yield alerts
        yield from self._mqtt(self._statuses().get("mqtt") or {})

    def _cameras(self, c: Counters, rates: dict):
        fams = {
            "frames": CounterMetricFamily(P + "camera_frames", "frames read", labels=["camera"]),
            "processed": CounterMetricFamily(
                P + "camera_hyperframes_processed",
                "hyperframes the model ran on",
                labels=["camera"],
            ),
            "dropped": CounterMetricFamily(
                P + "camera_hyperframes_dropped",
                "hyperframes replaced before the model took them",
                labels=["camera"],
            ),
            "reconnects": CounterMetricFamily(
                P + "camera_reconnects", "source reopened", labels=["camera"]
            ),
            "snapshots_late": CounterMetricFamily(
                P + "camera_snapshots_late",
                "snapshots that took the newest kept frame: the event's own frame was gone",
                labels=["camera"],
            ),
            "connected": GaugeMetricFamily(
                P + "camera_connected", "1 if a frame arrived recently", labels=["camera"]
            ),
            "fps": GaugeMetricFamily(
                P + "camera_fps", "frames per second since the last scrape", labels=["camera"]
            ),
            "processed_fps": GaugeMetricFamily(
                P + "camera_processed_fps",
                "hyperframes processed per second since the last scrape",
                labels=["camera"],
            ),
        }
        skipped = CounterMetricFamily(
            P + "camera_hyperframes_skipped",
            "hyperframes not put through the model, by reason",
            labels=["camera", "reason"],
        )
        for cam in c.cameras:
            for reason, n in cam.skipped:
                skipped.add_metric([cam.name, reason], n)
            r = rates.get(cam.name, {})
            values = {
                "frames": cam.grabbed,
                "processed": cam.processed,
                "dropped": cam.dropped,
                "reconnects": cam.reconnects,
                "snapshots_late": cam.snapshots_late,
                "connected": 1.0 if cam.connected else 0.0,
                "fps": r.get("fps", 0.0),
                "processed_fps": r.get("processed_fps", 0.0),
            }
            for key, fam in fams.items():
                fam.add_metric([cam.name], values[key])
        yield from fams.values()
        yield skipped

    def _latency(self, c: Counters) -> HistogramMetricFamily:
        counts = c.latency_buckets or (0,) * (len(LATENCY_BUCKETS) + 1)
        buckets, running = [], 0
        for bound, n in zip((*LATENCY_BUCKETS, float("inf")), counts, strict=True):
            running += n
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
        return HistogramMetricFamily(
            P + "inference_seconds",
            "model run time",
            buckets=buckets,
            sum_value=c.latency_sum,
        )

    def _mqtt(self, status: dict):
        if not status:
            return
        spool, mqtt = status["spool"], status["mqtt"]
        yield GaugeMetricFamily(P + "spool_depth", "alerts waiting in the spool", spool["depth"])
        yield CounterMetricFamily(
            P + "spool_dropped", "alerts the full spool gave up", spool["dropped"]
        )
        yield GaugeMetricFamily(
            P + "mqtt_connected", "1 if connected to the broker", 1.0 if mqtt["connected"] else 0.0
        )
        rejected = CounterMetricFamily(
            P + "mqtt_rejected",
            "messages the broker refused, or that could not be made to fit it, by reason",
            labels=["reason"],
        )
        for reason, n in sorted((mqtt.get("rejected") or {}).items()):
            rejected.add_metric([reason], n)
        yield rejected
        yield GaugeMetricFamily(
            P + "mqtt_degraded",
            "1 while the latest message on a topic was refused by the broker or skipped",
            1.0 if status.get("degraded") else 0.0,
        )
