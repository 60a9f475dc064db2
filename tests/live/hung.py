"""HungCameras: network cameras that accept TCP and never answer.

What a camera that has wedged its web server looks like from outside: the connect succeeds, the
request is read, and no byte ever comes back. FFmpeg waits for the HTTP (or RTSP) response until
its open timeout. One thread serves every port (a selector), so 16 of them cost one thread.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading

from ._proc import HOST


class HungCameras:
    """``n`` listening sockets on 127.0.0.1; ``.urls`` are ``http://127.0.0.1:PORT/cam.ts``.

    Every connection is accepted, what it sends is read and thrown away, and it is kept open
    and silent until ``close()``. ``.accepted`` counts the connections (one per open attempt).
    """

    def __init__(self, n: int, path: str = "/cam.ts") -> None:
        self.path = path
        self.accepted = 0
        self._sel = selectors.DefaultSelector()
        self._listeners: list[socket.socket] = []
        self._conns: list[socket.socket] = []
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            s.listen(64)
            s.setblocking(False)
            self._listeners.append(s)
            self._sel.register(s, selectors.EVENT_READ, "listener")

    @property
    def urls(self) -> list[str]:
        return [f"http://{HOST}:{s.getsockname()[1]}{self.path}" for s in self._listeners]

    def start(self) -> HungCameras:
        self._thread = threading.Thread(target=self._serve, name="hung-cameras", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        while not self._closing.is_set():
            for key, _ in self._sel.select(timeout=0.1):
                sock = key.fileobj
                if key.data == "listener":
                    with contextlib.suppress(BlockingIOError, OSError):
                        conn, _ = sock.accept()
                        conn.setblocking(False)
                        self._conns.append(conn)
                        self._sel.register(conn, selectors.EVENT_READ, "conn")
                        self.accepted += 1
                    continue
                try:
                    data = sock.recv(65536)  # the request: read, never answered
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:  # the client gave up (its open timed out): forget it
                    self._sel.unregister(sock)
                    self._conns.remove(sock)
                    sock.close()

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join(5)
        for s in [*self._conns, *self._listeners]:
            with contextlib.suppress(OSError):
                s.close()
        self._sel.close()

    def __enter__(self) -> HungCameras:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
