"""RtspServer: ``rtsp-server-perl`` fed by ffmpeg, plus a minimal RTSP client to probe it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

from ._proc import (
    HOST,
    LiveFixture,
    free_port,
    free_udp_port_block,
    kill,
    port_accepts,
    spawn,
    wait_until,
)
from .clips import existing_clip, have_ffmpeg, loop_feed_cmd

RTSP_SERVER = "rtsp-server-perl"
# debugging knob: more verbose server logs (written to the fixture's log file, never the console)
_RTSP_LOGLEVEL = os.environ.get("EDGEHF_LIVE_RTSP_LOGLEVEL", "3")

#: value for the env var OPENCV_FFMPEG_CAPTURE_OPTIONS when reading from RtspServer.
#: rtsp-server-perl only speaks RTP over UDP; OpenCV's FFmpeg backend asks for TCP when the
#: env var is unset, so without this an open fails.
RTSP_CAPTURE_OPTIONS = "rtsp_transport;udp"


def have_rtsp_server() -> bool:
    return have_ffmpeg() and shutil.which(RTSP_SERVER) is not None


class RtspServer(LiveFixture):
    """``rtsp-server-perl`` fed by ``ffmpeg -re -stream_loop -1 -i CLIP -c copy -f rtsp``.

    Read at ``.url`` (``rtsp://127.0.0.1:CPORT/cam``) with RTP over **UDP**: set
    ``os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = RTSP_CAPTURE_OPTIONS`` before opening
    (``.capture_env()`` does it temporarily). The server does not support RTP-over-TCP.

    - ``stop()``            - the feeder is terminated (it sends TEARDOWN, the server unmounts
      the path). rtsp-server-perl does not tell connected clients: their RTSP session stays
      open and RTP just stops, i.e. readers see a *stall*; new opens get 404 until ``start()``.
    - ``stop(server=True)`` - the server dies too (connections reset, connects refused).
    - ``start()``           - (re)start the server if needed and the feeder; returns only once
      RTP packets actually flow to a client (``stream_ok()``). Old client sessions are not
      resumed: readers must reconnect.

    Quirks handled here: the server treats ANNOUNCE as "mounted", so DESCRIBE succeeds before
    the feed is up - readiness is checked with a real SETUP and a received RTP packet. A
    feeder that dies without TEARDOWN (killed mid-setup, SIGKILL) leaves a stale mount that
    makes every later ANNOUNCE fail with 403; ``start()`` then restarts the server (same ports).
    The server resets its RTP port counter to a global default when the last mount goes, so
    the wrapper sets that global too, keeping parallel servers on disjoint UDP ports.
    """

    def __init__(
        self,
        clip: str | os.PathLike,
        client_port: int | None = None,
        source_port: int | None = None,
        path: str = "cam",
        log_path: str | os.PathLike | None = None,
        rtp_start_port: int | None = None,
    ) -> None:
        self.clip = existing_clip(clip)
        self.client_port = client_port or free_port()
        self.source_port = source_port or free_port()
        while self.source_port == self.client_port:
            self.source_port = free_port()
        self.path = path.strip("/")
        self.rtp_start_port = rtp_start_port or free_udp_port_block(64)
        self._open_log(log_path, "rtsp")
        self.server_proc: subprocess.Popen | None = None
        self.feeder_proc: subprocess.Popen | None = None
        self._closed = False

    @property
    def url(self) -> str:
        return f"rtsp://{HOST}:{self.client_port}/{self.path}"

    @property
    def source_url(self) -> str:
        return f"rtsp://{HOST}:{self.source_port}/{self.path}"

    @staticmethod
    @contextlib.contextmanager
    def capture_env() -> Iterator[None]:
        """Context manager setting OPENCV_FFMPEG_CAPTURE_OPTIONS for UDP while opening."""
        key = "OPENCV_FFMPEG_CAPTURE_OPTIONS"
        saved = os.environ.get(key)
        os.environ[key] = RTSP_CAPTURE_OPTIONS
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = saved

    # -- control

    def start(self, timeout: float = 15.0) -> RtspServer:
        if self._closed:
            raise RuntimeError("server closed")
        deadline = time.monotonic() + timeout
        if _running(self.feeder_proc) and _running(self.server_proc):
            return self  # already up
        for attempt in range(2):
            if not _running(self.server_proc):
                self._start_server(deadline)
            budget = (deadline - time.monotonic()) / (2 - attempt)
            if self._start_feeder(max(1.0, budget)):
                return self
            # most likely a stale mount (403 on ANNOUNCE): restart the server, same ports
            self.stop(server=True)
        raise RuntimeError(
            f"RTSP feed did not come up; log: {self.log_path}\n{self.log_text()[-3000:]}"
        )

    def stop(self, server: bool = False) -> None:
        # SIGTERM: ffmpeg sends TEARDOWN so the server unmounts cleanly
        kill(self.feeder_proc, grace=3.0)
        self.feeder_proc = None
        if server:
            kill(self.server_proc, grace=1.0)
            self.server_proc = None

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self.stop(server=True)
        self._closed = True
        self._close_log()

    def describe_ok(self, timeout: float = 1.0) -> bool:
        """True if the server answers DESCRIBE for ``.url`` with 200 (path announced)."""
        try:
            with socket.create_connection((HOST, self.client_port), timeout=timeout) as s:
                s.settimeout(timeout)
                return _describe(s, self.url) == 200
        except OSError:
            return False

    def stream_ok(self, timeout: float = 2.0) -> bool:
        """True if a client SETUP succeeds and an RTP packet arrives within ``timeout`` s."""
        return _rtp_flows(self.client_port, self.url, timeout)

    # -- internals

    def _start_server(self, deadline: float) -> None:
        # Run the script through perl so that (a) stdout is unbuffered (log lines reach the
        # log file live) and (b) RTSP::Server's global RTP_START_PORT is ours, not 20000.
        script = shutil.which(RTSP_SERVER) or RTSP_SERVER
        wrapper = (
            "$| = 1; require RTSP::Server; $RTSP::Server::RTP_START_PORT = shift; "
            "my $s = shift; do $s; die $@ if $@"
        )
        cmd = [
            "perl",
            "-e",
            wrapper,
            self.rtp_start_port,
            script,
            "-c",
            self.client_port,
            "-s",
            self.source_port,
            "--client_listen_address",
            HOST,
            "--source_listen_address",
            HOST,
            "--rtp_start_port",
            self.rtp_start_port,
            "-l",
            _RTSP_LOGLEVEL,
        ]
        self.server_proc = p = spawn(cmd, self._log)
        ok = wait_until(
            lambda: (
                p.poll() is None
                and port_accepts(self.client_port)
                and port_accepts(self.source_port)
            ),
            max(0.5, deadline - time.monotonic()),
        )
        if not ok:
            kill(p)
            self.server_proc = None
            raise RuntimeError(
                f"rtsp-server-perl did not come up; log: {self.log_path}\n{self.log_text()[-2000:]}"
            )

    def _start_feeder(self, timeout: float) -> bool:
        cmd = loop_feed_cmd(self.clip, "-f", "rtsp", "-rtsp_transport", "udp", self.source_url)
        self.feeder_proc = p = spawn(cmd, self._log)
        ok = wait_until(
            lambda: p.poll() is None and self.describe_ok(0.5) and self.stream_ok(1.0),
            timeout,
            interval=0.1,
        )
        if not ok:
            kill(p)
            self.feeder_proc = None
        return ok


def _running(p: subprocess.Popen | None) -> bool:
    return p is not None and p.poll() is None


# --------------------------------------------------------------------------- RTSP client probe


def _header(head: str, name: str) -> str | None:
    """The value of header ``name`` in a response head (case-insensitive), else None."""
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name:
            return v.strip()
    return None


def _rtsp_request(
    sock: socket.socket, method: str, url: str, cseq: int, headers: str = ""
) -> tuple[int | None, str]:
    """Send one request; return (status or None, response head). A body is read and dropped."""
    sock.sendall(f"{method} {url} RTSP/1.0\r\nCSeq: {cseq}\r\n{headers}\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head_bytes, _, body = data.partition(b"\r\n\r\n")
    head = head_bytes.decode("latin-1")
    first = head.split("\r\n", 1)[0].split()
    try:
        status = int(first[1])
    except (IndexError, ValueError):
        status = None
    length = _header(head, "content-length")
    need = int(length) - len(body) if length is not None else 0
    while need > 0:
        chunk = sock.recv(min(need, 4096))
        if not chunk:
            break
        need -= len(chunk)
    return status, head


def _describe(sock: socket.socket, url: str) -> int | None:
    return _rtsp_request(sock, "DESCRIBE", url, 1, "Accept: application/sdp\r\n")[0]


def _bind_rtp_pair() -> tuple[socket.socket, socket.socket] | None:
    """UDP sockets bound to an even port and the next one on 127.0.0.1 (RTP, RTCP)."""
    for _ in range(50):
        rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            rtp.bind((HOST, 0))
            port = rtp.getsockname()[1]
            if port % 2 == 0:
                rtcp.bind((HOST, port + 1))
                return rtp, rtcp
        except OSError:
            pass
        rtp.close()
        rtcp.close()
    return None


def _rtp_flows(port: int, url: str, timeout: float) -> bool:
    """DESCRIBE + SETUP (UDP, client ports on 127.0.0.1) and wait for one RTP datagram."""
    deadline = time.monotonic() + timeout
    pair = _bind_rtp_pair()
    if pair is None:
        return False
    rtp, rtcp = pair
    p = rtp.getsockname()[1]
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            if _describe(s, url) != 200:
                return False
            status, head = _rtsp_request(
                s,
                "SETUP",
                url.rstrip("/") + "/streamid=0",
                2,
                f"Transport: RTP/AVP;unicast;client_port={p}-{p + 1}\r\n",
            )
            if status != 200:
                return False
            session = _header(head, "session")
            try:
                rtp.settimeout(max(0.05, deadline - time.monotonic()))
                got = len(rtp.recv(65536)) > 0
            except OSError:
                got = False
            # rtsp-server-perl never answers TEARDOWN: send it and hang up
            session_line = f"Session: {session.split(';')[0]}\r\n" if session is not None else ""
            with contextlib.suppress(OSError):
                s.sendall(f"TEARDOWN {url} RTSP/1.0\r\nCSeq: 3\r\n{session_line}\r\n".encode())
            return got
    except OSError:
        return False
    finally:
        rtp.close()
        rtcp.close()
