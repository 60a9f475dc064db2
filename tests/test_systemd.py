"""``systemd/edge-hf.service``: what the issue requires of it, checked by reading it and by
``systemd-analyze`` (``verify``, and ``security --offline=true`` scoring 2.0 or less) where that
command exists. No systemd is running here, so the unit is analysed, not started."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edge_hf import config
from edge_hf.cli import build_parser
from tests.conftest import ROOT

UNIT = ROOT / "systemd" / "edge-hf.service"
EXAMPLE = ROOT / "systemd" / "config.example.toml"
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def directives(text: str) -> dict[str, list[tuple[str, str]]]:
    """Section -> [(key, value), ...] in order; keys may repeat, as systemd allows."""
    out: dict[str, list[tuple[str, str]]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = []
        else:
            key, _, value = line.partition("=")
            out[section].append((key.strip(), value.strip()))
    return out


UNIT_D = directives(UNIT.read_text())


@pytest.mark.parametrize(
    ("section", "key", "pattern"),
    [
        ("Unit", "StartLimitIntervalSec", r"\d+(s|min)?"),
        ("Unit", "StartLimitBurst", r"\d+"),
        ("Service", "Type", "notify"),
        ("Service", "NotifyAccess", "main"),
        ("Service", "WatchdogSec", r"\d+s"),
        ("Service", "Restart", "on-failure"),
        ("Service", "RestartSec", r"\d+s"),
        ("Service", "DynamicUser", "yes"),
        ("Service", "SupplementaryGroups", "video"),
        ("Service", "DevicePolicy", "closed"),
        ("Service", "DeviceAllow", "char-video4linux rw"),
        ("Service", "StateDirectory", "edge-hf"),
        ("Service", "ConfigurationDirectory", "edge-hf"),
        ("Service", "LoadCredential", "mqtt-password:/etc/edge-hf/mqtt-password"),
        ("Service", "NoNewPrivileges", "yes"),
        ("Service", "ProtectSystem", "strict"),
    ],
)
def test_the_unit_says_what_the_issue_asks(section: str, key: str, pattern: str):
    values = [v for k, v in UNIT_D.get(section, []) if k == key]
    assert values and all(re.fullmatch(pattern, v) for v in values), (section, key, values)


def test_exec_start_is_a_valid_edge_hf_command_line():
    (cmd,) = [v for k, v in UNIT_D["Service"] if k == "ExecStart"]
    argv = shlex.split(cmd)
    assert argv[0].endswith("/edge-hf")
    args = build_parser().parse_args(argv[1:])
    assert args.command == "run" and args.config == Path("/etc/edge-hf/config.toml")


def test_the_watchdog_outlasts_the_longest_legitimate_wait():
    """A camera open or read may block up to its timeout without being stuck."""
    (watchdog,) = [v for k, v in UNIT_D["Service"] if k == "WatchdogSec"]
    values = config.load_file(EXAMPLE)
    longest = max(values.get("capture.open_timeout", 10), values.get("capture.stall_timeout", 10))
    assert int(watchdog.rstrip("s")) >= 2 * longest


def _installed_copy(tmp: Path) -> Path:
    """The unit with ExecStart pointing at this checkout's edge-hf (verify wants it to exist)."""
    exe = Path(sys.prefix) / "bin" / "edge-hf"
    assert exe.exists(), f"{exe}: run scripts/setup.sh (pip install -e .)"
    text = UNIT.read_text().replace("/opt/edge-hf/.venv/bin/edge-hf", str(exe))
    (tmp / "edge-hf.service").write_text(text)
    return tmp / "edge-hf.service"


@needs_analyze
def test_systemd_analyze_verify_is_clean(tmp_path: Path):
    r = subprocess.run(
        [ANALYZE, "verify", str(_installed_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    complaints = [ln for ln in (r.stdout + r.stderr).splitlines() if "edge-hf.service" in ln]
    assert r.returncode == 0 and not complaints, r.stdout + r.stderr


@needs_analyze
def test_systemd_analyze_security_scores_2_or_less(tmp_path: Path):
    r = subprocess.run(
        [ANALYZE, "security", "--offline=true", "--no-pager", str(_installed_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    m = re.search(r"Overall exposure level for edge-hf\.service: (\d+\.\d+)", r.stdout)
    assert m, r.stdout + r.stderr
    print(f"systemd-analyze security: {m[1]}")
    assert float(m[1]) <= 2.0, r.stdout
