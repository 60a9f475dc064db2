"""MQTT URL, password and TLS options: tables of good and bad input, real files and env."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest

from edge_hf.errors import SinkError, UsageError
from edge_hf.sinks.mqtt.options import (
    MqttOptions,
    MqttUrl,
    TlsFiles,
    default_state_dir,
    parse_url,
    read_password,
    tls_context,
)
from tests.broker import have_openssl, make_certs


@pytest.mark.parametrize(
    ("url", "expect"),
    [
        ("mqtt://broker.lan", MqttUrl(False, "broker.lan", 1883, "edge-hf", None)),
        (
            "mqtts://edge@10.0.0.2:8884/home/porch/",
            MqttUrl(True, "10.0.0.2", 8884, "home/porch", "edge"),
        ),
        ("MQTT://h/p", MqttUrl(False, "h", 1883, "p", None)),
        ("mqtt://us%40er@h", MqttUrl(False, "h", 1883, "edge-hf", "us@er")),
    ],
)
def test_urls_are_split(url: str, expect: MqttUrl):
    assert parse_url(url) == expect


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("ftp://h", "unknown scheme 'ftp'"),
        ("broker.lan", "unknown scheme ''"),
        ("mqtt://", "no host"),
        ("mqtt://h:99999", "Port out of range"),
        ("mqtt://h/a/+", "prefix 'a/+' cannot be used in an MQTT topic"),
        ("mqtt://h/a//b", "prefix 'a//b' cannot be used"),
        ("mqtt://h/p?x=1", "unexpected '?' or '#'"),
        ("mqtt://u:hunter2@h", "mqtt://u:***@h: a password in the URL would be visible"),
    ],
)
def test_bad_urls_are_named_with_the_fix(url: str, needle: str):
    with pytest.raises(UsageError) as e:
        parse_url(url)
    assert needle in str(e.value) and "hunter2" not in str(e.value)


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv("EDGE_HF_MQTT_PASSWORD", raising=False)
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    return monkeypatch


def test_password_sources_in_order(tmp_path: Path, clean_env):
    (tmp_path / "creds").mkdir()
    (tmp_path / "creds" / "mqtt-password").write_text("from-credential\n")
    (tmp_path / "pw").write_text("from-file\r\n")
    assert read_password("u", None) is None
    clean_env.setenv("CREDENTIALS_DIRECTORY", str(tmp_path / "creds"))
    assert read_password("u", None) == "from-credential"
    clean_env.setenv("EDGE_HF_MQTT_PASSWORD", "from-env")
    assert read_password("u", None) == "from-env"
    assert read_password("u", tmp_path / "pw") == "from-file"  # the flag wins


def _empty(t: Path) -> Path:
    (t / "empty").write_text("\n")
    return t / "empty"


@pytest.mark.parametrize(
    ("user", "make", "expect"),
    [
        ("u", lambda t: t / "missing", pytest.raises(SinkError, match="missing: cannot read it")),
        ("u", _empty, pytest.raises(SinkError, match="is empty; write the MQTT password")),
        (None, _empty, pytest.raises(SinkError, match="is empty")),
        ("u", lambda t: None, nullcontext()),
    ],
)
def test_password_file_problems(tmp_path, clean_env, user, make, expect):
    with expect:
        read_password(user, make(tmp_path))


def test_a_password_without_a_user_is_refused(clean_env):
    clean_env.setenv("EDGE_HF_MQTT_PASSWORD", "s3cret")
    with pytest.raises(UsageError, match=r"\$EDGE_HF_MQTT_PASSWORD\) but the --mqtt URL names no"):
        read_password(None, None)


def test_the_password_is_not_in_repr_or_display():
    o = MqttOptions(host="h", port=1883, username="u", password="s3cret")
    assert "s3cret" not in repr(o) and o.display == "mqtt://u@h:1883/edge-hf"


@pytest.mark.skipif(not have_openssl(), reason="needs the openssl command")
@pytest.mark.parametrize(
    ("files", "expect"),
    [
        (lambda c: TlsFiles(ca=c.ca), nullcontext()),
        (lambda c: TlsFiles(), nullcontext()),  # the system's CAs
        (lambda c: TlsFiles(ca=c.ca, cert=c.cert, key=c.key), nullcontext()),
        (
            lambda c: TlsFiles(ca=c.ca.with_name("nope.pem")),
            pytest.raises(SinkError, match="--mqtt-ca .*nope.pem does not exist"),
        ),
        (lambda c: TlsFiles(ca=c.key), pytest.raises(SinkError, match="expected PEM files")),
        (
            lambda c: TlsFiles(key=c.key),
            pytest.raises(UsageError, match="--mqtt-key needs --mqtt-cert"),
        ),
    ],
)
def test_tls_files_are_checked_up_front(tmp_path: Path, files, expect):
    certs = make_certs(tmp_path / "pki")
    with expect:
        ctx = tls_context(files(certs))
        assert ctx.check_hostname and ctx.verify_mode.name == "CERT_REQUIRED"


def test_state_dir_prefers_systemd(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("STATE_DIRECTORY", f"{tmp_path}/a:{tmp_path}/b")
    assert default_state_dir() == tmp_path / "a"
    monkeypatch.delenv("STATE_DIRECTORY")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_dir() == tmp_path / "xdg" / "edge-hf"


# --------------------------------------------------------------------------- properties

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

URLISH = st.one_of(
    st.text(max_size=60),
    st.builds(
        "{}://{}{}{}".format,
        st.sampled_from(["mqtt", "mqtts", "MQTT", "ftp", ""]),
        st.sampled_from(["", "u@", "u:p@", "@", ":@", "u%40x@"]),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
        st.sampled_from(
            ["", ":0", ":1", ":65535", ":65536", ":-1", ":x", "/#", "/a/+", "/a", "?q"]
        ),
    ),
)


@settings(max_examples=300, deadline=None)
@given(URLISH)
def test_any_mqtt_url_is_a_valid_setting_or_a_one_line_error(url: str):
    try:
        u = parse_url(url)
    except UsageError as e:
        assert "\n" not in str(e) and str(e).startswith("--mqtt ")
        return
    assert 1 <= u.port <= 65535 and u.host and u.prefix
    assert not set(u.prefix) & set("+#\0") and "" not in u.prefix.split("/")
    u.prefix.encode("utf-8")  # a topic paho can send
