"""The HTTP sink's server under hostile or careless clients, with real sockets on 127.0.0.1
(and ::1 where the host has an IPv6 loopback): a foreign ``Host`` (DNS rebinding) is refused, a
reset connection prints nothing, a burst of connections waits in the listen backlog rather
than for a SYN retransmission, slow clients cost no thread each, ``[::1]:PORT`` serves; both
in-process and as a user runs it (a real ``edge-hf run`` subprocess)."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from edge_hf.errors import UsageError
from edge_hf.sinks.http import HttpOptions, HttpSink
from tests.conftest import EdgeHF, run_cli
from tests.live import free_port, wait_until
from tests.test_http import FakeRuntime


def _have_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


HAVE_IPV6 = _have_ipv6_loopback()
needs_ipv6 = pytest.mark.skipif(not HAVE_IPV6, reason="this host has no IPv6 loopback (::1)")


@pytest.fixture
def serve():
    """``serve(host="127.0.0.1", allowed=())``: an in-process HTTP sink on a free port, closed
    at the end; returns (the fake runtime, the sink, the port)."""
    sinks = []

    def start(host: str = "127.0.0.1", allowed: tuple[str, ...] = ()):
        rt, port = FakeRuntime(), free_port()
        sink = HttpSink(HttpOptions(host, port, allowed))
        sink.start(rt.info())
        sinks.append(sink)
        return rt, sink, port

    yield start
    for sink in sinks:
        sink.close()


def request(
    port: int, path: str, host: str | None = None, address: str = "127.0.0.1"
) -> tuple[int, bytes]:
    """GET ``path`` with a real HTTP client; ``host``: the Host header (default: the address)."""
    conn = http.client.HTTPConnection(address, port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


# --------------------------------------------------------------------------- Host


def test_a_foreign_host_is_refused_in_a_short_answer_and_one_log_line(serve, caplog):
    _, _, port = serve()
    for known in (f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", "LOCALHOST."):
        assert request(port, "/api/frame/porch", known)[0] == 200, known
    caplog.set_level(logging.INFO, "edge_hf")
    for _ in range(20):
        code, body = request(port, "/api/frame/porch", f"attacker.example:{port}")
        assert code == 421 and len(body) < 200 and b"attacker" not in body, body
    for host in ("127.0.0.1.attacker.example", "10.0.0.7", f"[::1]:{port}", "a b"):
        assert request(port, "/metrics", host)[0] == 421, host
    refused = [r for r in caplog.records if "Host" in r.getMessage()]
    assert len(refused) == 1 and refused[0].levelno == logging.WARNING, caplog.text
    assert "'attacker.example:" in refused[0].getMessage()
    assert "--http-allowed-host" in refused[0].getMessage()


def test_a_request_without_host_is_answered(serve):
    """No browser leaves Host out (so no web page can), but a script speaking HTTP/1.0 may."""
    _, _, port = serve()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        assert s.recv(12) == b"HTTP/1.0 200"


def test_a_reverse_proxys_name_is_answered_when_allowed(serve):
    _, _, port = serve(allowed=("edge.example.org", "box.local"))
    assert request(port, "/healthz", "edge.example.org")[0] == 200
    assert request(port, "/healthz", "Box.Local:443")[0] == 200
    assert request(port, "/healthz", "other.example.org")[0] == 421


def test_on_every_address_any_ip_literal_and_this_machines_name_are_answered(serve):
    _, _, port = serve("0.0.0.0")
    for host in (f"127.0.0.1:{port}", "192.168.1.20", "[fe80::1]", socket.gethostname()):
        assert request(port, "/healthz", host)[0] == 200, host
    assert request(port, "/healthz", "attacker.example")[0] == 421


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["edge.example.org"], ("edge.example.org",)),
        (["Box.Local.", "10.0.0.5", "[fe80::1]"], ("box.local", "10.0.0.5", "fe80::1")),
        ("edge.example.org", UsageError),  # a file's value must be a list
        (["edge.example.org:443"], UsageError),  # no port
        (["http://edge.example.org"], UsageError),
        (["two words"], UsageError),
        ([""], UsageError),
        (["a" * 64 + ".example"], UsageError),  # a label of 64 characters
    ],
)
def test_allowed_hosts_are_checked_like_the_other_settings(value, expected):
    from edge_hf.sinks.http import allowed_hosts

    if expected is UsageError:
        with pytest.raises(UsageError, match=r"^http.allowed_hosts: expected a list of host"):
            allowed_hosts(value, "http.allowed_hosts")
    else:
        assert allowed_hosts(value, "http.allowed_hosts") == expected


def test_edge_hf_run_refuses_a_frame_to_a_foreign_host(tmp_path: Path):
    port = free_port()
    args = ("run", "--camera", "synth://demo", "--http", str(port))
    with EdgeHF(tmp_path, *args, "--http-allowed-host", "edge.example.org") as run:
        assert wait_until(lambda: _answers(port, "/api/frame/demo") == 200, 60), run.stderr()
        assert request(port, "/api/frame/demo", "attacker.example")[0] == 421
        assert request(port, "/api/frame/demo", "edge.example.org")[0] == 200
        assert run.signal(15) == 0
    assert run.stderr().count("refused a request for Host 'attacker.example'") == 1


def _answers(port: int, path: str, address: str = "127.0.0.1") -> int | None:
    try:
        return request(port, path, address=address)[0]
    except OSError:
        return None


# --------------------------------------------------------------------------- resets


def _reset(port: int, send: bytes = b"", read: bool = False) -> None:
    """Connect, send ``send``, (wait for the answer to start), then close with a TCP RST."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if send:
            s.sendall(send)
        if read:
            s.recv(1)


RESETS = (
    b"",  # before a byte of the request
    b"GET /api/frame/demo HTTP/1.1\r\n",  # in the middle of the request
    b"GET /api/frame/demo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",  # while it is answered
)


def test_reset_connections_print_nothing_on_stderr(tmp_path: Path):
    port = free_port()
    with EdgeHF(tmp_path, "run", "--camera", "synth://demo", "--http", str(port)) as run:
        assert wait_until(lambda: _answers(port, "/api/frame/demo") == 200, 60), run.stderr()
        before = run.stderr().splitlines()
        for i in range(60):
            _reset(port, RESETS[i % 3], read=i % 6 == 5)
        assert request(port, "/api/frame/demo")[0] == 200  # it still serves, after them all
        time.sleep(0.5)  # the server has seen every reset by now (a lost line shows up below)
        assert run.stderr().splitlines() == before, run.stderr()[-3000:]
        assert run.signal(15) == 0


def test_a_reset_connection_is_one_debug_line_at_most(serve, caplog, capfd):
    _, _, port = serve()
    caplog.set_level(logging.DEBUG, "edge_hf")
    for send in RESETS:
        _reset(port, send.replace(b"/demo", b"/porch"))
    assert request(port, "/healthz")[0] == 200
    time.sleep(0.5)  # every reset has been seen
    assert capfd.readouterr().err == ""  # nothing around logging
    mine = [r for r in caplog.records if "/healthz" not in r.getMessage()]
    assert len(mine) <= len(RESETS), caplog.text
    assert all(r.levelno == logging.DEBUG and r.exc_info is None for r in mine), caplog.text
    assert "\n" not in "".join(r.getMessage() for r in mine)


# --------------------------------------------------------------------------- load


def _total_retransmits(s: socket.socket) -> int:
    """``tcpi_total_retrans`` of Linux's ``struct tcp_info``: segments (SYNs too) sent again."""
    return struct.unpack_from("I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 100)[0]


def test_a_burst_of_100_connections_waits_in_the_backlog_not_for_a_retransmit(serve):
    """With a backlog of 5, a burst overflows the kernel's accept queue: the dropped SYNs are
    sent again after 1 s (``tcpi_total_retrans``), so some requests take a second or three."""
    _, _, port = serve()
    results: list[tuple[int, int, float]] = []
    lock, go = threading.Lock(), threading.Event()

    def client() -> None:
        go.wait(10)
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = s.recv(12)
            while s.recv(65536):
                pass
            row = (int(head[9:12] or 0), _total_retransmits(s), time.perf_counter() - t)
        with lock:
            results.append(row)

    threads = [threading.Thread(target=client) for _ in range(100)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(30)
    codes = sorted({code for code, _, _ in results})
    retransmitted = sum(1 for _, n, _ in results if n)
    slowest = max(s for _, _, s in results)
    print(f"\nburst of 100: slowest {slowest * 1000:.0f} ms, {retransmitted} retransmitted")
    assert len(results) == 100 and codes == [200], codes
    assert retransmitted == 0, f"{retransmitted} of 100 connections waited for a retransmission"


def test_slow_clients_take_no_thread_each_and_others_are_still_answered(serve):
    """300 clients that send half a request and wait: each used to hold a thread of its own
    (for 5 s at least, forever for one sending a byte every 4 s). Past ``MAX_PENDING`` the
    oldest are closed, so one that sends its request at once is still answered."""
    from edge_hf.sinks.http_server import MAX_PENDING

    _, _, port = serve()
    base = threading.active_count()
    slow = []
    try:
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no end of head
            slow.append(s)
        assert request(port, "/api/events")[0] == 200  # not 503: nobody is held up
        most = [threading.active_count()]
        grew = wait_until(lambda: most.append(threading.active_count()) or most[-1] > base, 2.0)
        print(f"\n300 slow clients: {base} threads before, {max(most)} with them")
        assert not grew, f"{max(most) - base} threads more for 300 slow clients"
        assert slow[0].recv(1) == b""  # closed to make room for newer ones
        assert 300 - MAX_PENDING <= 300 - len(_still_open(slow)) <= 300 - MAX_PENDING + 1
    finally:
        for s in slow:
            s.close()
    assert request(port, "/api/events")[0] == 200


def _still_open(socks: list[socket.socket]) -> list[socket.socket]:
    """The sockets the server has not closed (no EOF waiting to be read)."""
    out = []
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1):
                out.append(s)  # an answer: open (none is expected)
        except BlockingIOError:
            out.append(s)
        finally:
            s.setblocking(True)
    return out


def test_the_workers_are_a_fixed_pool(serve):
    from edge_hf.sinks.http_server import WORKERS

    base = threading.active_count()
    _, sink, port = serve()
    assert threading.active_count() == base + WORKERS + 1  # the workers and the listener
    for _ in range(30):
        assert request(port, "/healthz")[0] == 200
    assert threading.active_count() == base + WORKERS + 1
    sink.close()
    assert wait_until(lambda: threading.active_count() == base, 5)


# --------------------------------------------------------------------------- IPv6


@needs_ipv6
def test_an_ipv6_loopback_server_answers_its_own_names(serve):
    _, _, port = serve("::1")
    for host in (f"[::1]:{port}", "[::1]", f"localhost:{port}"):
        assert request(port, "/healthz", host, address="::1")[0] == 200, host
    assert request(port, "/healthz", "127.0.0.1", address="::1")[0] == 421
    with pytest.raises(OSError):
        request(port, "/healthz", address="127.0.0.1")  # listening on ::1 only


@needs_ipv6
def test_edge_hf_run_and_check_config_agree_on_an_ipv6_address(tmp_path: Path):
    port = free_port()
    conf = tmp_path / "config.toml"
    conf.write_text(f"[cameras]\ndemo = 'synth://demo'\n[http]\nlisten = '[::1]:{port}'\n")
    r = run_cli("check-config", str(conf), timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["http"]["listen"] == f"[::1]:{port}"
    with EdgeHF(tmp_path, "run", "--config", str(conf)) as run:
        assert wait_until(lambda: _answers(port, "/healthz", "::1") == 200, 60), run.stderr()
        assert run.signal(15) == 0
    assert f"status page http://[::1]:{port}/" in run.stderr()


@pytest.mark.parametrize(
    ("listen", "code", "needle"),
    [
        ("::1:9108", 2, "an IPv6 address goes in brackets: [::1]:9108"),
        ("192.0.2.1:9108", 5, "cannot listen"),  # an address of no interface of this machine
        ("no_such.host.invalid:9108", 5, "cannot listen"),
    ],
)
def test_check_config_refuses_what_run_would(tmp_path: Path, listen: str, code: int, needle: str):
    conf = tmp_path / "config.toml"
    conf.write_text(f"[cameras]\ndemo = 'synth://demo'\n[http]\nlisten = '{listen}'\n")
    for command in (("check-config", str(conf)), ("run", "--config", str(conf))):
        r = run_cli(*command, timeout=60)
        assert r.returncode == code, (command, r.stderr)
        assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_connection_closed_to_make_room_while_it_sends_is_no_trouble(serve, monkeypatch):
    """The oldest half-sent request is closed when a new connection comes, perhaps in the same
    wake-up as its own next bytes (which must then be ignored, not read from a closed socket)."""
    from edge_hf.sinks import http_server

    monkeypatch.setattr(http_server, "MAX_PENDING", 2)
    _, _, port = serve()
    slow = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
    try:
        for _ in range(100):
            slow[0].sendall(b"GET /api/events HTTP/1.1\r\n")  # the oldest's next bytes, and
            slow.append(socket.create_connection(("127.0.0.1", port), timeout=10))  # a newcomer
            slow.pop(0).close()
        assert request(port, "/api/events")[0] == 200
    finally:
        for s in slow:
            s.close()
