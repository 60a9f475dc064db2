"""``--http [HOST:]PORT``: a small HTTP server on its own thread (loopback unless an address is
given): ``/metrics`` (Prometheus, see ``http_metrics``), ``/healthz`` (200, or 503 when a camera
has stalled, a loop has stopped or a sink says it is degraded), ``/api/events`` (recent events
but the updates, newest first, JSON), ``/api/status`` (cameras, their rates and open alerts with
how long they have been open and their person down, health, the sinks' status),
``/api/frame/<camera>`` (its newest frame, a JPEG made on request), ``/snapshots/<file>``
(with ``--snapshots``) and ``/``, a
status page (``assets/status.html``: plain HTML, CSS and a little script reading the two APIs;
no build step, no external assets).

The server (``http_server``) reads request heads on one thread and answers them on a fixed
pool of workers, so a slow, silent or resetting client holds nothing else up and costs no thread
of its own; ``close`` stops it within a second. It answers only the Host names it listens on
(``http_server.Hosts``; ``--http-allowed-host`` adds a reverse proxy's): 421 to the others,
whose pages could otherwise read frames through DNS rebinding. Nothing is computed until
someone asks.
"""

from __future__ import annotations

import io
import ipaddress
import json
import logging
import os
import re
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from edge_hf import __version__
from edge_hf._values import Option
from edge_hf.alerts import Event, utc_time
from edge_hf.errors import SinkError, UsageError
from edge_hf.health import RateMeter
from edge_hf.sinks.base import RunInfo, SinkSection
from edge_hf.sinks.http_server import Every, Hosts, Server, check_address

log = logging.getLogger("edge_hf.http")
RECENT = 100  # events kept for /api/events
STALE_AFTER = 10.0  # seconds without a heartbeat before /healthz calls a loop stopped
REQUEST_TIMEOUT = 5.0  # seconds a client may take to read each part of the answer
PREVIEW_HEIGHT = 360  # pixels: the status page's latest frames
PAGE = Path(__file__).resolve().parent.parent / "assets" / "status.html"


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"  # an IP address (IPv6 without brackets) or a host name
    port: int = 9108
    allowed_hosts: tuple[str, ...] = ()  # Host names answered besides the listening ones

    @property
    def address(self) -> str:
        """``host:port``, ``[v6]:port``: as --http takes it."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


_LABEL = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")


def _host(text: str) -> str | None:
    """An IP address (IPv6 in brackets or not) or a host name, normalized; None if neither."""
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return str(ipaddress.ip_address(inner))
    except ValueError:
        pass
    name = text.lower().removesuffix(".")
    if len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split(".")):
        return name
    return None


def listen(v: Any, where: str) -> HttpOptions:
    """``PORT`` (loopback), ``HOST:PORT`` or ``[IPv6]:PORT``."""
    text = str(v).strip() if isinstance(v, (str, int)) and not isinstance(v, bool) else ""
    host, sep, port = text.rpartition(":")
    name = _host(host) if sep else "127.0.0.1"
    bad_port = not port.isdigit() or not 0 < int(port) < 65536
    if not bad_port and name and ":" in name and not host.startswith("["):
        raise UsageError(f"{where}: an IPv6 address goes in brackets: [{name}]:{port}, found {v!r}")
    if bad_port or not name:
        raise UsageError(
            f"{where}: expected [HOST:]PORT with a port from 1 to 65535 (e.g. 127.0.0.1:9108 or "
            f"[::1]:9108), found {v!r}"
        )
    return HttpOptions(name, int(port))


listen.metavar = "[HOST:]PORT"


def allowed_hosts(v: Any, where: str) -> tuple[str, ...]:
    """Flags: ``["edge.example.org", …]`` (repeated); a file: the same list."""
    items = v if isinstance(v, list) else [None]
    names = [_host(h.strip()) if isinstance(h, str) else None for h in items]
    if None in names:
        raise UsageError(
            f"{where}: expected a list of host names or addresses without a port (e.g. "
            f'["edge.example.org"]), found {v!r}'
        )
    return tuple(names)


def _open_event(event: Event, now: float) -> dict:
    """An open alert as ``/api/status`` shows it: since when, for how long, how long down."""
    out = {
        "alert": event.key,
        "id": event.id,
        "since": utc_time(event.time),
        "open_for": round(max(0.0, now - event.time), 1),
    }
    if event.down_for is not None:
        out["down_for"] = round(event.down_for, 1)
    return out


class HttpSink:
    name = "http"

    def __init__(self, opts: HttpOptions) -> None:
        self.opts = opts
        self._events: deque[dict] = deque(maxlen=RECENT)
        self._alerts: Counter[tuple[str, str]] = Counter()
        self._open: dict[str, dict[str, Event]] = {}  # camera -> key -> its open alert, newest
        self._meter = RateMeter()  # the status page's rates (since its previous request)
        self._lock = threading.Lock()
        self._server: Server | None = None
        self._refused = Every(60.0)  # refused Host names: a line a minute at most

    def start(self, run: RunInfo) -> None:
        from prometheus_client import CollectorRegistry

        from edge_hf.sinks.http_metrics import Collector

        self.run = run
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(Collector(run.counters, run.statuses, self.alerts))
        try:
            self._server = Server((self.opts.host, self.opts.port), _handler(self))
        except OSError as e:
            raise _cannot_listen(self.opts, e) from None
        host, port = self._server.server_address[:2]
        self.hosts = Hosts.of(self.opts.host, host, self.opts.allowed_hosts)
        self._server.start()
        shown = replace(self.opts, host=host.partition("%")[0], port=port).address
        log.info("http: status page http://%s/ (and /metrics, /healthz)", shown)

    def emit(self, event: Event) -> None:
        with self._lock:
            if event.kind != "update":  # open alerts show those (their durations)
                self._events.appendleft(event.to_dict())
            open_ = self._open.setdefault(event.camera, {})
            if event.kind == "start":
                self._alerts[(event.camera, event.key)] += 1
            if event.kind == "end":
                open_.pop(event.key, None)
            else:  # its newest update: how long the person has been down
                began = open_[event.key].time if event.key in open_ else event.time
                open_[event.key] = replace(event, time=began, small=None)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()  # within a second
        self._server = None

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
            open_ = {cam: sorted(alerts.items()) for cam, alerts in self._open.items()}
        now = time.time()
        cameras = [
            {
                "name": name,
                **r,
                "open_alerts": [key for key, _ in open_.get(name, [])],
                "open_events": [_open_event(e, now) for _, e in open_.get(name, [])],
            }
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

    def snapshot(self, name: str) -> bytes | None:
        """The JPEG behind ``/snapshots/<name>``: a file of the store's directory itself, never
        a symbolic link (which could lead anywhere this user may read)."""
        store = self.run.snapshots
        file = None if store is None else store.path(name)
        if file is None or file.is_symlink() or file.resolve().parent != store.dir.resolve():
            return None
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW)  # a link put there since
        except OSError:
            return None
        with open(fd, "rb") as f:
            return f.read()

    def refused(self, host: str, client: str) -> None:
        """A request for a Host this server does not answer: a line a minute at most."""
        more = self._refused.hit()
        if more is not None:
            log.warning(
                "http: refused a request for Host %r from %s: not a name this server listens "
                "on; behind a reverse proxy, add its name with --http-allowed-host NAME "
                "(http.allowed_hosts)%s",
                host[:100],
                client,
                Every.more(more),
            )

    def metrics(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


def _cannot_listen(opts: HttpOptions, e: OSError) -> SinkError:
    return SinkError(
        f"--http {opts.address}: cannot listen ({e.strerror or e}); choose another port or address"
    )


def _handler(sink: HttpSink) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """One request, whose head the server has read already (``head``)."""

        timeout = REQUEST_TIMEOUT
        server_version = "edge-hf"
        sys_version = ""  # not the Python version

        def __init__(self, sock, address: tuple, head: bytes) -> None:
            self.head = head
            super().__init__(sock, address, None)

        def setup(self) -> None:
            super().setup()
            self.rfile.close()  # the socket's: the head has been read from it already
            self.rfile = io.BytesIO(self.head)

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            hosts = self.headers.get_all("Host") or []
            if len(hosts) > 1 or not sink.hosts.allows(hosts[0] if hosts else None):
                sink.refused(", ".join(hosts), self.address_string())
                self._send(421, "text/plain", b"421 not a host name this server answers\n")
                return
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
                jpeg = sink.snapshot(path.removeprefix("/snapshots/"))
                if jpeg is None:
                    self._json(404, {"error": "no such snapshot"})
                else:
                    self._send(200, "image/jpeg", jpeg)
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
            log.debug('http: %s "%s" %d', self.address_string(), self.requestline, code)

        def log_request(self, code: Any = "-", size: Any = "-") -> None:
            pass  # _send logs the request once it is answered: one line, or the server's reset

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            log.debug("http: %s %s", self.address_string(), format % args)

    return Handler


def _settings(v: dict[str, Any]) -> HttpOptions | None:
    opts = v["http.listen"]
    return None if opts is None else replace(opts, allowed_hosts=v["http.allowed_hosts"])


def _check(opts: HttpOptions) -> None:
    """check-config: the address is one this machine can listen on, as ``run`` would find."""
    try:
        check_address(opts.host, opts.port)
    except OSError as e:
        raise _cannot_listen(opts, e) from None


def _describe(opts: HttpOptions) -> dict:
    return {"listen": opts.address, "allowed_hosts": list(opts.allowed_hosts)}


OPTIONS = (
    Option(
        "http.listen",
        "--http",
        listen,
        None,
        "serve a status page, /metrics, /healthz and /api/events on [HOST:]PORT (host default 127.0.0.1, IPv6 as [::1]:PORT; give an address to expose it)",
    ),
    Option(
        "http.allowed_hosts",
        "--http-allowed-host",
        allowed_hosts,
        (),
        "a Host name to answer besides those --http listens on (a reverse proxy's); repeatable",
        "append",
        "NAME",
    ),
)
SECTION = SinkSection("http", OPTIONS, _settings, HttpSink, check=_check, describe=_describe)
