"""Install edge-hf as a user does and run it there: CI's packaging gate (``make wheel-check``).

    .venv/bin/python scripts/wheel_check.py [--keep DIR]

1. builds the wheel from this checkout (``pip wheel --no-deps``) and checks that it holds every
   module and asset git tracks under ``edge_hf/`` (a package list by hand once left out
   ``edge_hf.sinks.mqtt``, and only a user's install found it);
2. installs it with ``[openvino]``, not editable, into a fresh venv in a temporary folder outside
   the checkout, and from there runs ``edge-hf --version``, ``edge-hf info`` on the embedded model
   and the demo story with the stdout, MQTT (a real mosquitto on 127.0.0.1) and HTTP sinks on;
3. checks that alerts come out of all three, that the version is the checkout's everywhere, and
   that torch is not installed; prints the wheel's and the venv's sizes.

Exits 0 when all hold, 1 with one line naming what failed. Needs the checkout's .venv (paho for
the test subscriber) and mosquitto; network: 127.0.0.1 and the package index only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.broker import Mosquitto, Subscriber  # noqa: E402
from tests.live._proc import free_port  # noqa: E402

DEMO_FRAMES = 700  # the demo story's first fall (frame 427) and its alert, paced: about 28 s


class Failed(Exception):
    pass


def sh(*cmd: str | Path, cwd: Path, timeout: float = 900, env: dict | None = None) -> str:
    r = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise Failed(f"{' '.join(map(str, cmd[:3]))} ... exited {r.returncode}: {tail[0]}")
    return r.stdout


def version() -> str:
    text = (ROOT / "edge_hf" / "__init__.py").read_text()
    return text.split('__version__ = "', 1)[1].split('"', 1)[0]


def build_wheel(dist: Path) -> Path:
    """From a copy of the files git tracks, as a clean clone has them: a build/ folder left in
    the checkout by an earlier build would fill in whatever the package list leaves out."""
    src = dist / "src"
    for name in sh("git", "ls-files", "-z", cwd=ROOT).split("\0"):
        if name and (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, src, cwd=dist)
    (wheel,) = dist.glob("edge_hf-*.whl")
    return wheel


def check_contents(wheel: Path) -> None:
    """Every file git tracks under edge_hf/ (modules and assets) is in the wheel."""
    tracked = sh("git", "ls-files", "edge_hf", cwd=ROOT).split()
    inside = set(zipfile.ZipFile(wheel).namelist())
    missing = [p for p in tracked if p not in inside]
    if missing:
        raise Failed(
            f"the wheel {wheel.name} lacks {len(missing)} file(s) of edge_hf/, e.g. {missing[0]}: "
            "check [tool.setuptools.packages.find] and package-data in pyproject.toml"
        )


def install(wheel: Path, where: Path) -> Path:
    venv = where / "venv"
    sh(sys.executable, "-m", "venv", venv, cwd=where)
    sh(venv / "bin" / "pip", "install", "-q", f"{wheel}[openvino]", cwd=where)
    return venv


def run_demo(venv: Path, where: Path) -> tuple[list[dict], list, dict]:
    """The demo story with stdout, MQTT and HTTP on; the events printed, the MQTT messages, and
    /api/status as read while it ran."""
    http = free_port()
    with Mosquitto() as broker, Subscriber(broker.port, "edge-hf/#") as sub:
        cmd = [
            str(venv / "bin" / "edge-hf"),
            "run",
            "--camera",
            f"synth://demo?frames={DEMO_FRAMES}",
            "--mqtt",
            f"mqtt://127.0.0.1:{broker.port}/edge-hf",
            "--state-dir",
            str(where / "state"),
            "--http",
            f"127.0.0.1:{http}",
        ]
        proc = subprocess.Popen(cmd, cwd=where, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        status: dict = {}
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http}/api/status", timeout=2) as r:
                    status = json.load(r)
            except OSError:
                pass
            time.sleep(0.5)
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate(timeout=30)
        if proc.returncode != 0:
            raise Failed(f"edge-hf run exited {proc.returncode}: {err.decode()[-300:].strip()}")
        time.sleep(1.0)  # the subscriber's last deliveries
        return [json.loads(line) for line in out.decode().splitlines()], sub.messages(), status


def check(venv: Path, where: Path) -> list[str]:
    edge_hf, py = venv / "bin" / "edge-hf", venv / "bin" / "python"
    said = sh(edge_hf, "--version", cwd=where).strip()
    if said != f"edge-hf {version()}":
        raise Failed(f"edge-hf --version: expected 'edge-hf {version()}', found {said!r}")
    model = sh(py, "-c", "from edge_hf.runtime import DEMO_MODEL; print(DEMO_MODEL)", cwd=where)
    model = Path(model.strip())
    if ROOT in model.parents or not model.name.endswith(".xml"):
        raise Failed(f"the embedded model should be OpenVINO's, installed; found {model}")
    info = sh(edge_hf, "info", model, cwd=where)
    if "fall" not in info:
        raise Failed(f"edge-hf info {model.name}: no 'fall' class in its output")
    torch = sh(py, "-c", "import importlib.util as u; print(u.find_spec('torch'))", cwd=where)
    if torch.strip() != "None":
        raise Failed("torch is installed in the device venv: a dependency pulled it in")

    events, messages, status = run_demo(venv, where)
    starts = [e for e in events if e.get("event") == "start" and e.get("label") == "fall"]
    if not starts:
        raise Failed(f"the demo printed no fall alert ({len(events)} events)")
    mqtt_events = [m for m in messages if m.topic == "edge-hf/events"]
    ids = {json.loads(m.payload).get("id") for m in mqtt_events}
    if not {e["id"] for e in starts} <= ids:
        raise Failed(f"MQTT: {len(starts)} fall starts printed, {len(ids)} event ids received")
    stats = [json.loads(m.payload) for m in messages if m.topic == "edge-hf/stats"]
    if status.get("version") != version() or (stats and stats[-1].get("version") != version()):
        raise Failed(f"/api/status or MQTT stats: version is not {version()}")
    if not status.get("cameras"):
        raise Failed("/api/status was never read while the demo ran")
    return [f"{len(starts)} fall alert(s) on stdout and MQTT", f"/api/status version {version()}"]


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--keep", type=Path, help="work in DIR and keep it (default: a temporary folder)"
    )
    args = ap.parse_args()
    where = args.keep or Path(tempfile.mkdtemp(prefix="edge-hf-wheel-"))
    where.mkdir(parents=True, exist_ok=True)
    env_clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    os.environ.clear()
    os.environ.update(env_clean)
    try:
        wheel = build_wheel(where)
        check_contents(wheel)
        venv = install(wheel, where)
        found = check(venv, where)
        sizes = wheel.stat().st_size, du(venv)
    except (Failed, subprocess.TimeoutExpired) as e:
        print(f"wheel-check: FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    mb = 1 << 20
    print(
        f"wheel-check: ok: {wheel.name} {sizes[0] / mb:.1f} MB; installed venv "
        f"{sizes[1] / mb:.0f} MB (no torch); " + "; ".join(found)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
