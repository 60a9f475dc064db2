"""``--http [HOST:]PORT``: a small HTTP server on its own thread (loopback unless an address is
given): ``/metrics`` (Prometheus, see ``http_metrics``), ``/healthz`` (200, or 503 when a camera
has stalled, a loop has stopped or a sink says it is degraded), ``/api/events`` (recent events, newest first, JSON),
``/api/status`` (cameras, their rates and open alerts, health, the sinks' status),
``/api/frame/<camera>`` (its newest frame, a JPEG made on request), ``/snapshots/<file>``
(with ``--snapshots``) and ``/``, a
status page (``assets/status.html``: plain HTML, CSS and a little script reading the two APIs;
no build step, no external assets).

A stdlib ``ThreadingHTTPServer``: one thread per request, each with a socket timeout, so a slow
or silent client holds nothing else up; ``close`` stops it within a second. Nothing is computed
until someone asks.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from edge_hf import __version__
from edge_hf._values import Option
from edge_hf.alerts import Event
from edge_hf.errors import SinkError, UsageError
from edge_hf.health import RateMeter
from edge_hf.sinks.base import RunInfo, SinkSection

log = logging.getLogger("edge_hf.http")
RECENT = 100  # events kept for /api/events
STALE_AFTER = 10.0  # seconds without a heartbeat before /healthz calls a loop stopped
REQUEST_TIMEOUT = 5.0  # seconds a client may take to send its request
PREVIEW_HEIGHT = 360  # pixels: the status page's latest frames
PAGE = Path(__file__).resolve().parent.parent / "assets" / "status.html"


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = 9108


def listen(v: Any, where: str) -> HttpOptions:
    """``PORT`` (loopback), ``HOST:PORT`` or ``[IPv6]:PORT``."""
    text = str(v).strip() if isinstance(v, (str, int)) and not isinstance(v, bool) else ""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536 or (sep and not host):
        raise UsageError(
            f"{where}: expected [HOST:]PORT with a port from 1 to 65535 (e.g. 127.0.0.1:9108), "
            f"found {v!r}"
        )
    return HttpOptions(host, int(port))


listen.metavar = "[HOST:]PORT"


class HttpSink:
    name = "http"

    def __init__(self, opts: HttpOptions) -> None:
        self.opts = opts
        self._events: deque[dict] = deque(maxlen=RECENT)
        self._alerts: Counter[tuple[str, str]] = Counter()
        self._open: dict[str, set[str]] = {}  # camera -> labels with an alert open
        self._meter = RateMeter()  # the status page's rates (since its previous request)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self, run: RunInfo) -> None:
        from prometheus_client import CollectorRegistry

        from edge_hf.sinks.http_metrics import Collector

        self.run = run
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(Collector(run.counters, run.statuses, self.alerts))
        try:
            self._server = ThreadingHTTPServer((self.opts.host, self.opts.port), _handler(self))
        except OSError as e:
            raise SinkError(
                f"--http {self.opts.host}:{self.opts.port}: cannot listen ({e.strerror}); "
                f"choose another port or address"
            ) from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.5,), name="http", daemon=True
        )
        self._thread.start()
        host, port = self._server.server_address[:2]
        log.info("http: status page http://%s:%d/ (and /metrics, /healthz)", host, port)

    def emit(self, event: Event) -> None:
        with self._lock:
            self._events.appendleft(event.to_dict())
            open_ = self._open.setdefault(event.camera, set())
            if event.kind == "start":
                self._alerts[(event.camera, event.label)] += 1
                open_.add(event.label)
            else:
                open_.discard(event.label)

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()  # waits for serve_forever's poll (0.5 s at most)
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(1.0)

    def status(self) -> dict:
        return {"listening": self._server is not None}

    # ------------------------------------------------------------------ what the pages show

    def alerts(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._alerts)

    def events(self) -> list[dict]:
        with self._lock:
            return list(self._events)

    def health(self) -> tuple[bool, dict]:
        stalled = [c.name for c in self.run.counters().cameras if not c.connected]
        stopped = self.run.health.stale(STALE_AFTER)
        # a sink that cannot do all it should (MQTT: alerts the broker refuses) says what
        degraded = {n: s["degraded"] for n, s in self.run.statuses().items() if s.get("degraded")}
        ok = not stalled and not stopped and not degraded
        body = {"ok": ok, "stalled_cameras": stalled, "stopped_loops": stopped}
        if degraded:
            body["degraded"] = degraded
        return ok, body

    def status_page(self) -> dict:
        """``/api/status``: what the status page shows."""
        c = self.run.counters()
        with self._lock:
            rates = self._meter.report(c)
            open_ = {cam: sorted(labels) for cam, labels in self._open.items()}
        cameras = [
            {"name": name, **r, "open_alerts": open_.get(name, [])}
            for name, r in rates["cameras"].items()
        ]
        return {
            "version": __version__,
            "cameras": cameras,
            "inference": rates["inference"],
            "health": self.health()[1],
            "sinks": self.run.statuses(),
        }

    def frame(self, camera: str) -> bytes | None:
        """The camera's newest frame as a JPEG (height <= PREVIEW_HEIGHT), made now."""
        image = self.run.latest_frame(camera)
        if image is None:
            return None
        import cv2

        h, w = image.shape[:2]
        if h > PREVIEW_HEIGHT:
            size = (max(1, round(w * PREVIEW_HEIGHT / h)), PREVIEW_HEIGHT)
            image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 80])
        return buf.tobytes() if ok else None

    def snapshot(self, name: str) -> Path | None:
        store = self.run.snapshots
        return None if store is None else store.path(name)

    def metrics(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


def _handler(sink: HttpSink) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT
        server_version = "edge-hf"
        sys_version = ""  # not the Python version

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                from prometheus_client import CONTENT_TYPE_LATEST

                self._send(200, CONTENT_TYPE_LATEST, sink.metrics())
            elif path == "/healthz":
                ok, body = sink.health()
                self._json(200 if ok else 503, body)
            elif path == "/api/events":
                self._json(200, sink.events())
            elif path == "/api/status":
                self._json(200, sink.status_page())
            elif path.startswith("/api/frame/"):
                jpeg = sink.frame(unquote(path.removeprefix("/api/frame/")))
                if jpeg is None:
                    self._json(404, {"error": "no such camera, or no frame yet"})
                else:
                    self._send(200, "image/jpeg", jpeg)
            elif path.startswith("/snapshots/"):
                file = sink.snapshot(path.removeprefix("/snapshots/"))
                if file is None:
                    self._json(404, {"error": "no such snapshot"})
                else:
                    self._send(200, "image/jpeg", file.read_bytes())
            elif path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", PAGE.read_bytes())
            else:
                self._json(
                    404, {"error": f"no page {path}; try /, /metrics, /healthz, /api/events"}
                )

        def _json(self, code: int, body: Any) -> None:
            self._send(code, "application/json", json.dumps(body).encode())

        def _send(self, code: int, kind: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            log.debug("http: %s %s", self.address_string(), format % args)

    return Handler


def _settings(v: dict[str, Any]) -> HttpOptions | None:
    return v["http.listen"]


def _describe(opts: HttpOptions) -> dict:
    return {"listen": f"{opts.host}:{opts.port}"}


OPTIONS = (
    Option(
        "http.listen",
        "--http",
        listen,
        None,
        "serve a status page, /metrics, /healthz and /api/events on [HOST:]PORT (host default 127.0.0.1; give an address to expose it)",
    ),
)
SECTION = SinkSection("http", OPTIONS, _settings, HttpSink, describe=_describe)
