"""The HTTP sink's server: a fixed pool of worker threads behind one thread that accepts
connections and reads their request heads, so that no client, however slow or however many,
costs a thread of its own.

- The listening socket has a backlog of ``BACKLOG``: a burst of connections waits in the kernel
  for a moment instead of having its SYNs dropped (and sent again a second later).
- One thread (``http``) accepts and reads every connection's request line and headers without
  blocking, up to ``MAX_PENDING`` connections at once, ``MAX_HEAD`` bytes and ``HEAD_TIMEOUT``
  seconds each; a client that sends half a request holds a socket, not a thread. When
  ``MAX_PENDING`` are open, the oldest is closed to make room: clients that trickle their
  requests (slowloris) cannot keep out one that sends its own at once. With no connection
  open the thread sleeps in ``select`` until one comes: an idle server costs nothing.
- A complete head goes to one of ``WORKERS`` threads, which answers it (``handle(sock, address,
  head)``, a ``BaseHTTPRequestHandler`` reading the head from memory); at most ``MAX_WAITING``
  wait for a worker, more are answered 503 at once.
- A client that resets its connection, or goes away mid-answer, is one DEBUG line; a bug in a
  handler is one ERROR with its traceback, through logging like everything else.

``Hosts`` says which ``Host`` headers the server answers (DNS rebinding, see its docstring).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("edge_hf.http")

WORKERS = 8  # threads answering requests (the page, /metrics, a JPEG: milliseconds each)
BACKLOG = 128  # connections the kernel keeps for us before they are accepted
MAX_PENDING = 256  # connections still sending their request head (a socket each, no thread)
MAX_WAITING = 256  # complete requests waiting for a worker (a burst of them)
MAX_HEAD = 64 * 1024  # bytes of request line and headers
HEAD_TIMEOUT = 5.0  # seconds a client may take to send its request head, in all

Handle = Callable[[socket.socket, tuple, bytes], None]


def resolve(host: str, port: int) -> tuple[int, tuple]:
    """(address family, socket address) to listen on: an IP literal as it is, a host name's
    first IPv4 address (its IPv6 one if it has none); raises OSError (``socket.gaierror``)."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    found.sort(key=lambda info: info[0] != socket.AF_INET)  # stable: the resolver's order else
    family, _, _, _, address = found[0]
    return family, address


def check_address(host: str, port: int) -> None:
    """Raise OSError if ``host`` cannot be listened on here (not resolvable, or no address of
    this machine), by binding it on a port of the system's choice: ``port`` may be in use by a
    running edge-hf."""
    family, address = resolve(host, port)
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((address[0], 0, *address[2:]))


class Server:
    """``Server((host, port), handle)``; ``start()`` serves on threads of its own, ``close()``
    stops them within about a second. Raises OSError when it cannot listen."""

    def __init__(self, address: tuple[str, int], handle: Handle, workers: int = WORKERS) -> None:
        family, sockaddr = resolve(*address)
        everywhere = family == socket.AF_INET6 and ipaddress.ip_address(sockaddr[0]).is_unspecified
        self.socket = socket.create_server(
            sockaddr,
            family=family,
            backlog=BACKLOG,
            dualstack_ipv6=everywhere and socket.has_dualstack_ipv6(),  # [::] takes IPv4 too
        )
        self.socket.setblocking(False)
        self.server_address = self.socket.getsockname()
        self._handle = handle
        self._waiting: queue.Queue = queue.Queue()  # bounded by MAX_WAITING where it is filled
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._busy = Every(60.0)
        self._threads = [threading.Thread(target=self._accept_loop, name="http", daemon=True)]
        self._threads += [
            threading.Thread(target=self._work, name=f"http-{i}", daemon=True)
            for i in range(workers)
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def close(self) -> None:
        self._stop.set()
        self._wake_w.send(b"x")
        deadline = time.monotonic() + 1.0
        self._threads[0].join(1.0)
        while True:  # requests not yet taken are closed unanswered
            try:
                _close(self._waiting.get_nowait()[0])
            except queue.Empty:
                break
        for _ in self._threads[1:]:
            self._waiting.put(None)
        for t in self._threads[1:]:
            t.join(max(0.0, deadline - time.monotonic()))
        for s in (self.socket, self._wake_r, self._wake_w):
            s.close()

    # ------------------------------------------------------------------ accepting and reading

    def _accept_loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.socket, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        pending: dict[socket.socket, _Pending] = {}  # in accept order, so by deadline
        try:
            while not self._stop.is_set():
                first = next(iter(pending.values()), None)
                timeout = None if first is None else max(0.0, first.deadline - time.monotonic())
                for key, _ in sel.select(timeout):
                    if key.fileobj is self.socket:
                        self._accept(sel, pending)
                    elif key.fileobj is not self._wake_r:
                        self._read(sel, pending, key.data)
                now = time.monotonic()
                for p in [p for p in pending.values() if p.deadline <= now]:
                    self._drop(sel, pending, p)  # too slow: closed without an answer
        except Exception:  # a bug: said through logging, not on stderr by threading
            log.exception("http: the server stopped accepting connections")
        finally:
            for p in list(pending.values()):
                self._drop(sel, pending, p)
            sel.close()

    def _accept(self, sel: selectors.BaseSelector, pending: dict) -> None:
        while True:
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # out of file descriptors, say: the next select tries again
                log.debug("http: accept: %s", e)
                return
            sock.setblocking(False)
            if len(pending) >= MAX_PENDING:  # the oldest goes: it has sent the least, the slowest
                oldest = next(iter(pending.values()))
                log.debug("http: %s: closed, still sending its request", oldest.address[0])
                self._drop(sel, pending, oldest)
            p = _Pending(sock, address, time.monotonic() + HEAD_TIMEOUT)
            pending[sock] = p
            sel.register(sock, selectors.EVENT_READ, p)

    def _read(self, sel: selectors.BaseSelector, pending: dict, p: _Pending) -> None:
        if pending.get(p.sock) is not p:  # closed to make room since select() saw it ready
            return
        try:
            data = p.sock.recv(16384)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # reset by the client
            log.debug("http: %s: %s", p.address[0], e.strerror or e)
            data = b""
        if not data:
            self._drop(sel, pending, p)
            return
        start = max(0, len(p.head) - 2)
        p.head += data
        if b"\n\n" not in p.head[start:] and b"\n\r\n" not in p.head[start:]:
            if len(p.head) > MAX_HEAD:
                _answer(p.sock, 431, "Request Header Fields Too Large")
                self._drop(sel, pending, p)
            return
        sel.unregister(p.sock)
        del pending[p.sock]
        if self._waiting.qsize() >= MAX_WAITING:
            self._refuse(p.sock, p.address)
            return
        p.sock.setblocking(True)
        self._waiting.put((p.sock, p.address, p.head))

    def _drop(self, sel: selectors.BaseSelector, pending: dict, p: _Pending) -> None:
        sel.unregister(p.sock)
        del pending[p.sock]
        _close(p.sock)

    def _refuse(self, sock: socket.socket, address: tuple) -> None:
        _answer(sock, 503, "Service Unavailable", "Retry-After: 1\r\n")
        _close(sock)
        more = self._busy.hit()
        if more is not None:
            log.warning(
                "http: answered 503 to %s: %d requests already waiting for a worker%s",
                address[0],
                MAX_WAITING,
                Every.more(more),
            )

    # ------------------------------------------------------------------ answering

    def _work(self) -> None:
        while (item := self._waiting.get()) is not None:
            sock, address, head = item
            try:
                if not self._stop.is_set():
                    self._handle(sock, address, head)
            except OSError as e:  # the client reset the connection or stopped reading
                log.debug("http: %s: %s", address[0], e.strerror or e)
            except Exception:
                log.exception("http: answering %s failed", address[0])
            finally:
                _close(sock)


@dataclass
class _Pending:
    sock: socket.socket
    address: tuple
    deadline: float
    head: bytes = b""


def _answer(sock: socket.socket, code: int, reason: str, headers: str = "") -> None:
    """A few bytes on a fresh connection: they fit its empty send buffer, never blocking."""
    body = f"{code} {reason}\n"
    text = (
        f"HTTP/1.0 {code} {reason}\r\nContent-Type: text/plain\r\n{headers}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}"
    )
    with contextlib.suppress(OSError):
        sock.send(text.encode())


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)  # the answer first, then the end (not a reset)
    sock.close()


class Every:
    """A log line that must not flood: ``hit()`` returns None, or the number of hits since the
    previous line when ``seconds`` have passed since it (the first hit: 0)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last = -float("inf")
        self._since = 0
        self._lock = threading.Lock()

    def hit(self) -> int | None:
        with self._lock:
            now = time.monotonic()
            if now - self._last < self.seconds:
                self._since += 1
                return None
            self._last, since, self._since = now, self._since, 0
            return since

    @staticmethod
    def more(n: int) -> str:
        """What to add to the line for the ``n`` hits it did not print."""
        return f" ({n} more since the last such line)" if n else ""


# --------------------------------------------------------------------------- Host


def host_name(value: str) -> str | None:
    """The host of a Host header (``name``, ``name:port``, ``[v6]:port``), lower-case, without
    a final dot, an IP address in its standard form; None if it is not one."""
    value = value.strip()
    if value.startswith("["):
        name, sep, port = value[1:].partition("]")
        port = port.removeprefix(":") if sep else "x"
    else:
        name, _, port = value.partition(":")
        if ":" in port:  # an IPv6 address without its brackets
            return None
    if port and not port.isdigit():
        return None
    return normal(name) or None


def normal(name: str) -> str:
    """A host name lower-case and without a final dot, an IP address in its standard form."""
    name = name.lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


@dataclass(frozen=True)
class Hosts:
    """The Host headers a server answers. A web page can make a browser request any address,
    loopback too, but it can read the answer only from a name of its own origin: it binds that
    name to our address (DNS rebinding), and the browser's Host header then names the page's
    site. So the server answers only the name or address it listens on, ``localhost`` when
    that is loopback, this machine's name (``gethostname()``, and with ``.local`` for mDNS)
    and the names given (a reverse proxy's). Listening on every address (``0.0.0.0``,
    ``[::]``), any IP address is answered too: an origin that is an address belongs to
    whoever answers on it. A request without Host (HTTP/1.0 from a script; no browser leaves
    it out) is answered."""

    names: frozenset[str]
    any_address: bool = False

    @classmethod
    def of(cls, host: str, bound: str, extra: tuple[str, ...] = ()) -> Hosts:
        """``host`` as configured, ``bound`` the address it resolved to, ``extra`` more names."""
        ip = ipaddress.ip_address(bound.partition("%")[0])
        me = socket.gethostname()
        names = {normal(n) for n in (host, str(ip), me, f"{me}.local", *extra)}
        if ip.is_loopback or ip.is_unspecified:
            names.add("localhost")
        return cls(frozenset(names), ip.is_unspecified)

    def allows(self, header: str | None) -> bool:
        if header is None:
            return True
        name = host_name(header)
        if name is None:
            return False
        return name in self.names or (self.any_address and _is_address(name))


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
