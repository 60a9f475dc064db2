"""HttpTsServer: a looping clip served as HTTP MPEG-TS by a Python accept loop + ffmpeg."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import subprocess
import threading
import time

from ._proc import HOST, LiveFixture, free_port, kill, spawn
from .clips import existing_clip, loop_feed_cmd

_HTTP_404 = b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_HTTP_200 = (
    b"HTTP/1.0 200 OK\r\nContent-Type: video/mp2t\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)


class HttpTsServer(LiveFixture):
    """Serves ``clip`` in an endless real-time loop as HTTP MPEG-TS at ``.url``.

    Why not ``ffmpeg ... -f mpegts -listen 1 http://...``: that serves exactly one client,
    and exits as soon as that client disconnects, so between a reader's release() and its
    reconnect nothing is listening unless someone relaunches ffmpeg - racy. Instead a small
    Python accept loop owns the port and, per client, spawns
    ``ffmpeg -re -stream_loop -1 -i CLIP -c copy -f mpegts pipe:1`` and relays its output.
    Every client therefore starts at the clip's first keyframe, any number of clients work,
    and ``stop()``/``start()`` are deterministic:

    - ``stop()``  - camera goes away: listener closed (new connects are refused), relays
      killed, client sockets shut down (reader sees EOF).
    - ``hang()``  - camera freezes: relays killed but client sockets stay open and silent;
      new connections are accepted and then ignored. Exercises read timeouts.
    - ``start()`` - camera back on the same port (hung connections are closed first).
    """

    def __init__(
        self,
        clip: str | os.PathLike,
        port: int | None = None,
        path: str = "/cam.ts",
        log_path: str | os.PathLike | None = None,
        realtime: bool = True,
    ) -> None:
        self.clip = existing_clip(clip)
        self.port = port or free_port()
        self.path = path if path.startswith("/") else "/" + path
        self.realtime = realtime
        self._open_log(log_path, "http")
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._accepting = threading.Event()
        self._conns: list[_Relay] = []
        self._mode = "stopped"  # "serving" | "hung" | "stopped" | "closed"
        self.connections_total = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{self.path}"

    @property
    def state(self) -> str:
        return self._mode

    @property
    def active_clients(self) -> int:
        with self._lock:
            return sum(1 for c in self._conns if c.streaming)

    # -- control

    def start(self, timeout: float = 5.0) -> HttpTsServer:
        if self._mode == "closed":
            raise RuntimeError("server closed")
        if self._mode == "hung":
            self._drop_conns()
        self._mode = "serving"
        if self._listener is None:
            self._listen(timeout)
        return self

    def stop(self) -> None:
        """Close the listener and every client connection (reader sees EOF/refused)."""
        if self._mode == "closed":
            return
        self._mode = "stopped"
        self._close_listener()
        self._drop_conns()

    def hang(self) -> None:
        """Keep sockets open but send nothing more (reader must rely on its read timeout)."""
        if self._mode == "closed":
            return
        self._mode = "hung"
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.freeze()

    def close(self) -> None:
        if getattr(self, "_mode", "closed") == "closed":
            return
        self.stop()
        self._mode = "closed"
        self._close_log()

    # -- internals

    def _listen(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((HOST, self.port))
                s.listen(16)
                break
            except OSError as e:
                s.close()
                if e.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
        s.settimeout(0.1)
        self._listener = s
        self._accepting.set()
        t = threading.Thread(
            target=self._accept_loop, args=(s,), name=f"http-ts:{self.port}", daemon=True
        )
        self._accept_thread = t
        t.start()

    def _close_listener(self) -> None:
        s, self._listener = self._listener, None
        self._accepting.clear()
        if s is not None:
            with contextlib.suppress(OSError):
                s.close()
        t, self._accept_thread = self._accept_thread, None
        if t is not None and t is not threading.current_thread():
            t.join(timeout=2.0)

    def _drop_conns(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            c.close()
        for c in conns:
            c.join(2.0)

    def _accept_loop(self, s: socket.socket) -> None:
        while self._accepting.is_set() and self._listener is s:
            try:
                sock, _ = s.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            relay = _Relay(self, sock)
            with self._lock:
                self._conns = [c for c in self._conns if c.alive]
                self._conns.append(relay)
                self.connections_total += 1
            relay.start(frozen=self._mode != "serving")

    def _ffmpeg_cmd(self) -> list[str]:
        return loop_feed_cmd(self.clip, "-f", "mpegts", "pipe:1", realtime=self.realtime)


class _Relay:
    """One HTTP client: read the request, answer 200, pipe ffmpeg's TS output to it."""

    def __init__(self, server: HttpTsServer, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.proc: subprocess.Popen | None = None
        self.streaming = False
        self._frozen = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="http-ts-relay", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self, frozen: bool) -> None:
        if frozen:
            self._frozen.set()
        self._thread.start()

    def freeze(self) -> None:
        self._frozen.set()
        kill(self.proc, grace=0.5)

    def close(self) -> None:
        self._closed.set()
        self._frozen.set()
        kill(self.proc, grace=0.5)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def join(self, timeout: float) -> None:
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self._serve()
        except OSError:
            pass
        finally:
            self.streaming = False
            kill(self.proc, grace=0.5)
            if self._frozen.is_set() and not self._closed.is_set():
                self._closed.wait(60.0)  # hung: keep the socket open, silent, until closed
            with contextlib.suppress(OSError):
                self.sock.close()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        target = self._read_request_target()
        if target is None or self._frozen.is_set():
            return  # client gave up, or hung camera: accepted, never answered
        if target.split("?", 1)[0] != self.server.path:
            self._sendall(_HTTP_404)
            return
        self._sendall(_HTTP_200)
        self.proc = spawn(self.server._ffmpeg_cmd(), self.server._log, stdout=subprocess.PIPE)
        if self._frozen.is_set():  # raced with freeze()/close()
            return
        self.streaming = True
        fd = self.proc.stdout.fileno()
        while not self._frozen.is_set():
            try:
                data = os.read(fd, 65536)
            except (OSError, ValueError):
                return
            if not data or not self._sendall(data):
                return

    def _read_request_target(self) -> str | None:
        """The request line's target ("" if absent); None if no full request within 5 s."""
        req = b""
        deadline = time.monotonic() + 5.0
        while b"\r\n\r\n" not in req and b"\n\n" not in req:
            if self._closed.is_set() or time.monotonic() > deadline or len(req) > 65536:
                return None
            try:
                chunk = self.sock.recv(4096)
            except TimeoutError:
                continue
            if not chunk:
                return None
            req += chunk
        parts = req.split(b"\r\n", 1)[0].split()
        return parts[1].decode("latin-1") if len(parts) > 1 else ""

    def _sendall(self, data: bytes) -> bool:
        view = memoryview(data)
        while view:
            if self._frozen.is_set():
                return False
            try:
                n = self.sock.send(view)
            except TimeoutError:
                continue
            view = view[n:]
        return True
