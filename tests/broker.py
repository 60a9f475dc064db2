"""A real mosquitto broker on 127.0.0.1 and a real paho subscriber, for the MQTT tests.

    with Mosquitto(users={"edge": "s3cret"}, persistent=True) as broker:
        with Subscriber(broker.port, auth=("edge", "s3cret")) as sub:
            ...
            broker.stop()      # SIGTERM (saves its persistence file) or stop(signal.SIGKILL)
            broker.start()     # same port, same config

The broker is started as ``mosquitto -c CONF`` with ``listener PORT 127.0.0.1``; with ``users``
it gets a ``password_file`` made by ``mosquitto_passwd -b -c`` and refuses anonymous clients.
With ``persistent=True`` it keeps sessions (and queued QoS 1 messages) in a file across
``stop()``/``start()``, so a subscriber with a fixed client id misses nothing while the broker
is down. ``acl`` writes an ``acl_file`` (``{"edge": ("write edge-hf/available",)}``: one
``topic`` line per rule, under ``user edge``); ``set_acl()`` rewrites it and ``reload()``
makes the running broker read it again (SIGHUP), as an operator fixing an ACL would.
``max_packet_size`` and ``message_size_limit`` are the mosquitto.conf options of those names.
``V311Only`` stands in front of a broker as one that has no MQTT 5. Its log is the fixture's
log file (``.log_text()``). Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt

from tests.live._proc import HOST, LiveFixture, free_port, kill, port_accepts, spawn, wait_until

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def have_mosquitto() -> bool:
    return Path(MOSQUITTO).exists() and shutil.which("mosquitto_passwd") is not None


class Mosquitto(LiveFixture):
    def __init__(
        self,
        port: int | None = None,
        users: dict[str, str] | None = None,
        persistent: bool = False,
        tls: TlsCerts | None = None,
        log_path: str | None = None,
        acl: dict[str, tuple[str, ...]] | None = None,
        max_packet_size: int | None = None,
        message_size_limit: int | None = None,
    ) -> None:
        self.port = port or free_port()
        self.tls = tls
        self.tls_port = free_port() if tls else None
        self.dir = Path(tempfile.mkdtemp(prefix="edgehf-mosquitto-"))
        self.conf = self.dir / "mosquitto.conf"
        self.acl_file = self.dir / "acl"
        if acl is not None:
            self.set_acl(acl)
        limits = {"max_packet_size": max_packet_size, "message_size_limit": message_size_limit}
        self.conf.write_text(self._config(users or {}, persistent, acl is not None, limits))
        self.proc: subprocess.Popen | None = None
        self._open_log(log_path, "mosquitto")

    def set_acl(self, acl: dict[str, tuple[str, ...]]) -> None:
        """Write the ACL file: per user, its ``topic`` rules (``"read #"``, ``"write a/b"``)."""
        lines = []
        for user, rules in acl.items():
            lines += [f"user {user}", *(f"topic {rule}" for rule in rules), ""]
        self.acl_file.write_text("\n".join(lines))

    def reload(self, timeout: float = 10.0) -> None:
        """SIGHUP: the broker reads its ACL file again (connections stay up)."""
        before = self.log_text().count("Reloading config")
        self.proc.send_signal(signal.SIGHUP)
        if not wait_until(lambda: self.log_text().count("Reloading config") > before, timeout):
            raise RuntimeError(f"mosquitto did not reload in {timeout} s: {self.log_text()}")

    def _config(self, users: dict[str, str], persistent: bool, acl: bool, limits: dict) -> str:
        lines = [
            f"listener {self.port} {HOST}",
            "user root" if _is_root() else "",  # as root, mosquitto would switch to `mosquitto`
            "log_dest stderr",
            "log_type all",
            "connection_messages true",
        ]
        if users:
            pw = self.dir / "passwd"
            for i, (user, password) in enumerate(users.items()):
                create = ["-c"] if i == 0 else []
                subprocess.run(
                    ["mosquitto_passwd", *create, "-b", str(pw), user, password],
                    check=True,
                    capture_output=True,
                    timeout=30,
                )
            lines += ["allow_anonymous false", f"password_file {pw}"]
        else:
            lines.append("allow_anonymous true")
        if persistent:
            lines += ["persistence true", f"persistence_location {self.dir}/"]
        if acl:
            lines.append(f"acl_file {self.acl_file}")
        lines += [f"{key} {value}" for key, value in limits.items() if value is not None]
        if self.tls:  # a second listener, TLS only; the first stays plain for test subscribers
            t = self.tls
            lines += [f"listener {self.tls_port} {HOST}", f"cafile {t.ca}"]
            lines += [f"certfile {t.cert}", f"keyfile {t.key}"]
        return "\n".join(line for line in lines if line) + "\n"

    @property
    def url(self) -> str:
        return f"mqtt://{HOST}:{self.port}"

    def start(self, timeout: float = 10.0) -> Mosquitto:
        if self.proc is not None and self.proc.poll() is None:
            return self
        self.proc = spawn([MOSQUITTO, "-c", self.conf], self._log)
        if not wait_until(lambda: port_accepts(self.port) or self.proc.poll() is not None, timeout):
            raise RuntimeError(f"mosquitto did not listen on {self.port}: {self.log_text()}")
        if self.proc.poll() is not None:
            raise RuntimeError(f"mosquitto exited ({self.proc.returncode}): {self.log_text()}")
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """The broker goes away; SIGTERM lets it save its persistence file, SIGKILL does not."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill(self.proc)
        kill(self.proc)
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        self._close_log()


def _is_root() -> bool:
    return os.geteuid() == 0


@dataclass(frozen=True)
class TlsCerts:
    ca: Path  # the test CA's certificate: what a client must trust
    cert: Path  # the broker's certificate, for IP 127.0.0.1, signed by the CA
    key: Path


def have_openssl() -> bool:
    return shutil.which("openssl") is not None


def make_certs(d: Path) -> TlsCerts:
    """A throwaway CA and a server certificate for 127.0.0.1 (EC P-256), by the openssl CLI."""
    d.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60, cwd=d)

    openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=edge-hf test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    )
    return TlsCerts(d / "ca.pem", d / "server.pem", d / "server.key")


@dataclass(frozen=True)
class Message:
    topic: str
    payload: str
    retain: bool
    at: float  # time.monotonic() on arrival
    raw: bytes = b""  # the payload as sent (``payload`` is it decoded, for text topics)


class Subscriber:
    """A paho client subscribed to ``topic`` at QoS 1, collecting every message it receives.

    With ``client_id`` its session is persistent (clean_session=False): a ``persistent``
    broker queues messages for it while it is disconnected. It reconnects quickly by itself.
    """

    def __init__(
        self,
        port: int,
        topic: str = "#",
        client_id: str | None = None,
        auth: tuple[str, str] | None = None,
    ) -> None:
        self.port, self.topic = port, topic
        self._lock = threading.Lock()
        self._messages: list[Message] = []
        self.subscribed = threading.Event()
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=client_id or "",
            clean_session=client_id is None,
        )
        if auth:
            self.client.username_pw_set(*auth)
        self.client.reconnect_delay_set(1, 1)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a: self.subscribed.set()
        self.client.on_message = self._on_message

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if not reason_code.is_failure:
            client.subscribe(self.topic, qos=1)

    def _on_message(self, client, userdata, msg) -> None:
        text = msg.payload.decode(errors="replace")
        m = Message(msg.topic, text, bool(msg.retain), time.monotonic(), bytes(msg.payload))
        with self._lock:
            self._messages.append(m)

    def __enter__(self) -> Subscriber:
        self.client.connect_async(HOST, self.port, keepalive=10)
        self.client.loop_start()
        if not self.subscribed.wait(10):
            self.close()
            raise RuntimeError(f"subscriber: no SUBACK from 127.0.0.1:{self.port} in 10 s")
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.disconnect()
        self.client.loop_stop()

    def messages(self, topic: str | None = None) -> list[Message]:
        with self._lock:
            return [m for m in self._messages if topic is None or m.topic == topic]

    def payloads(self, topic: str) -> list[str]:
        return [m.payload for m in self.messages(topic)]


def retained(port: int, topic: str, auth: tuple[str, str] | None = None) -> str | None:
    """The message retained on ``topic`` (None if there is none), read by a fresh client."""
    cmd = ["mosquitto_sub", "-h", HOST, "-p", str(port), "-t", topic, "-C", "1", "-W", "2"]
    cmd += ["--retained-only"]
    if auth:
        cmd += ["-u", auth[0], "-P", auth[1]]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    return r.stdout.strip() if r.returncode == 0 and r.stdout else None


class V311Only:
    """A broker without MQTT 5 (mosquitto before 1.6, and others still about), for the fallback:
    a TCP proxy on 127.0.0.1 in front of a real broker that answers a CONNECT of protocol
    level 5 as MQTT 3.1.1 (section 3.1.2.2) tells a server that does not support it to - CONNACK
    return code 1, "unacceptable protocol version", then close - and passes every other
    connection through to ``upstream`` untouched, both ways. A stand-in because no broker
    installed here lacks MQTT 5; ``refused_v5`` counts the CONNECTs it turned away.
    """

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.refused_v5 = 0
        self._server = socket.create_server((HOST, 0))
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"mqtt://{HOST}:{self.port}"

    def __enter__(self) -> V311Only:
        self._spawn(self._accept)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._server.close()
        for t in self._threads:
            t.join(5)

    def _spawn(self, fn, *args) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            self._spawn(self._serve, client)

    def _serve(self, client: socket.socket) -> None:
        with client:
            client.settimeout(10)
            try:
                first = _read_packet(client)
            except OSError:
                return
            level = first[first.index(b"MQTT") + 4] if b"MQTT" in first[:16] else None
            if level == 5:
                self.refused_v5 += 1
                client.sendall(bytes([0x20, 2, 0, 1]))
                return
            with socket.create_connection((HOST, self.upstream), timeout=10) as up:
                up.sendall(first)
                self._spawn(_pipe, up, client, self._stop)
                _pipe(client, up, self._stop)


def _read_packet(sock: socket.socket) -> bytes:
    """One whole MQTT packet: fixed header, remaining length (variable-length), the rest."""
    data = _read(sock, 1)
    length, shift = 0, 0
    while True:
        b = _read(sock, 1)
        data += b
        length |= (b[0] & 0x7F) << shift
        shift += 7
        if not b[0] & 0x80:
            break
    return data + _read(sock, length)


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _pipe(src: socket.socket, dst: socket.socket, stop: threading.Event) -> None:
    """Copy bytes until either side closes (then close both, so the other pipe ends too)."""
    src.settimeout(0.5)
    try:
        while not stop.is_set():
            try:
                chunk = src.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
