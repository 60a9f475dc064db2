"""Where and how the MQTT sink connects: the URL, the password, TLS. Validated once, at start-up.

``mqtt://[user@]host[:port][/prefix]`` (``mqtts://`` for TLS). The password never comes from
the command line, where every user of the machine can read it (``ps``); it comes from, in
order: ``--mqtt-password-file``, ``$EDGE_HF_MQTT_PASSWORD``, or ``$CREDENTIALS_DIRECTORY/
mqtt-password`` (systemd ``LoadCredential=mqtt-password:…``). It is kept out of ``repr`` and
every printed URL.
"""

from __future__ import annotations

import os
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from edge_hf.errors import SinkError, UsageError
from edge_hf.paths import file_problem, read_secret, secret_there
from edge_hf.redact import mask_url, printable
from edge_hf.sinks.mqtt.spool import SpoolLimits

PASSWORD_ENV = "EDGE_HF_MQTT_PASSWORD"
CREDENTIAL = "mqtt-password"  # the name under $CREDENTIALS_DIRECTORY
_PORTS = {"mqtt": 1883, "mqtts": 8883}
_NOT_IN_TOPICS = set("+#\0")


@dataclass(frozen=True)
class TlsFiles:
    ca: Path | None = None  # PEM bundle to trust; None: the system's CAs
    cert: Path | None = None  # client certificate (PEM), for brokers that ask for one
    key: Path | None = None  # its private key, if not inside ``cert``
    insecure: bool = False  # skip the host name check (the chain is still verified)


@dataclass(frozen=True)
class MqttOptions:
    host: str
    port: int
    prefix: str = "edge-hf"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: TlsFiles | None = None  # None: plain TCP
    client_id: str = ""
    keepalive: int = 30
    stats_interval: float = 60.0  # seconds between <prefix>/stats messages
    reconnect_min: float = 1.0
    reconnect_max: float = 30.0
    state_dir: Path = Path(".")  # holds the spool
    discovery: bool = False  # publish Home Assistant discovery configs
    discovery_prefix: str = "homeassistant"  # where Home Assistant listens for them
    spool: SpoolLimits = field(default_factory=SpoolLimits)

    @property
    def display(self) -> str:
        """The URL as the user gave it, password-free by construction."""
        user = f"{self.username}@" if self.username else ""
        scheme = "mqtts" if self.tls else "mqtt"
        return f"{scheme}://{user}{self.host}:{self.port}/{self.prefix}"


@dataclass(frozen=True)
class MqttUrl:
    tls: bool
    host: str
    port: int
    prefix: str
    username: str | None


def parse_url(url: str, where: str = "--mqtt") -> MqttUrl:
    """Split and check an ``mqtt://`` or ``mqtts://`` URL; every error names ``where``."""
    shown = printable(mask_url(url))
    if shown != mask_url(url) or any(c.isspace() for c in url):
        raise UsageError(
            f"{where} {shown}: not a URL (control characters, spaces or bytes that are not "
            f"UTF-8); expected mqtt://[user@]host[:port][/prefix]"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise UsageError(
            f"{where} {shown}: {e}; expected mqtt://[user@]host[:port][/prefix]"
        ) from None
    scheme = parts.scheme.lower()
    if scheme not in _PORTS:
        raise UsageError(
            f"{where} {shown}: unknown scheme {parts.scheme!r}; expected mqtt://[user@]host"
            f"[:port][/prefix] or mqtts://… for TLS"
        )
    if parts.password is not None:
        raise UsageError(
            f"{where} {shown}: a password in the URL would be visible to every user (ps, "
            f"logs); remove it and use --mqtt-password-file, ${PASSWORD_ENV} or the "
            f"{CREDENTIAL} systemd credential"
        )
    if not parts.hostname:
        raise UsageError(f"{where} {shown}: no host; expected mqtt://[user@]host[:port][/prefix]")
    if "?" in url or "#" in url:  # mqtt://h/# has an empty fragment: still not a prefix
        raise UsageError(f"{where} {shown}: unexpected '?' or '#'; a prefix is a plain path")
    if port == 0:
        raise UsageError(f"{where} {shown}: port 0; expected a port from 1 to 65535")
    prefix = parts.path.strip("/") or "edge-hf"
    check_topic_level(prefix, f"{where} {shown}: prefix", levels=True)
    return MqttUrl(
        tls=scheme == "mqtts",
        host=parts.hostname,
        port=_PORTS[scheme] if port is None else port,
        prefix=prefix,
        username=unquote(parts.username) if parts.username else None,
    )


def check_topic_level(text: str, what: str, levels: bool = False) -> None:
    """Reject what would break a topic: wildcards, NUL, empty levels, and '/' unless ``levels``."""
    bad = _NOT_IN_TOPICS | (set() if levels else {"/"})
    if not text or any(c in bad for c in text) or (levels and "" in text.split("/")):
        allowed = "" if levels else " or '/'"
        raise UsageError(
            f"{what} {text!r} cannot be used in an MQTT topic: no '+', '#', empty levels{allowed}"
        )


def read_password(username: str | None, password_file: Path | None) -> str | None:
    """The password from the first place that has one (see the module docstring)."""
    password, origin = None, ""
    creds = os.environ.get("CREDENTIALS_DIRECTORY")
    if password_file is not None:
        password, origin = _read_secret(password_file, "--mqtt-password-file"), "a file"
    elif os.environ.get(PASSWORD_ENV):
        password, origin = os.environ[PASSWORD_ENV], f"${PASSWORD_ENV}"
    elif creds and secret_there(Path(creds) / CREDENTIAL):
        path = Path(creds) / CREDENTIAL
        password, origin = _read_secret(path, "the systemd credential"), str(path)
    if password is not None and not username:
        raise UsageError(
            f"an MQTT password was given ({origin}) but the --mqtt URL names no user; "
            f"use mqtt://USER@host"
        )
    return password


def _read_secret(path: Path, what: str) -> str:
    return read_secret(path, what, SinkError, "the MQTT password")


def tls_context(tls: TlsFiles) -> ssl.SSLContext:
    """A verifying client context; a missing or bad file is named, with the flag to fix."""
    for path, flag in ((tls.ca, "--mqtt-ca"), (tls.cert, "--mqtt-cert"), (tls.key, "--mqtt-key")):
        problem = file_problem(Path(path)) if path is not None else None
        if problem == "does not exist":
            raise SinkError(f"{flag} {path} does not exist (or is not a file)")
        if problem:
            raise SinkError(f"{flag} {path} {problem}")
    if tls.key is not None and tls.cert is None:
        raise UsageError("--mqtt-key needs --mqtt-cert (the client certificate it belongs to)")
    try:
        ctx = ssl.create_default_context(cafile=str(tls.ca) if tls.ca else None)
        if tls.cert is not None:
            ctx.load_cert_chain(str(tls.cert), str(tls.key) if tls.key else None)
    except (ssl.SSLError, OSError) as e:
        raise SinkError(
            f"TLS files ({tls.ca or 'system CAs'}, {tls.cert or 'no client cert'}): {e}; "
            f"expected PEM files"
        ) from None
    if tls.insecure:
        ctx.check_hostname = False  # the chain is still verified, only the name is not
    return ctx


def default_client_id(prefix: str) -> str:
    """Stable per host and prefix, so broker ACLs and logs can name this device."""
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in socket.gethostname())
    tail = prefix.replace("/", "-")
    return f"edge-hf-{host}-{tail}"[:64]


def default_state_dir() -> Path:
    """systemd's ``StateDirectory=``, else the XDG user state directory."""
    sd = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if sd:
        return Path(sd)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "edge-hf"
