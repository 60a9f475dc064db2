"""The status page in a real headless Chromium: ``edge-hf run --http`` on a synthetic camera that
falls every second or so; the page, rendered by the browser from ``/api/status`` and
``/api/events``, must show the camera and a fall alert with its snapshot, and its screenshot
must not be blank.

    EDGE_HF_SCREENSHOT=docs/status-page.png .venv/bin/python -m pytest tests/test_status_page.py

also saves the screenshot (the README's). Needs Debian's ``chromium`` (apt-get install
chromium); skipped, with that reason, where it is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import cv2
import pytest

from tests.conftest import EdgeHF
from tests.live import free_port, wait_until

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs a headless Chromium (apt-get install chromium)"
)


def chromium(tmp: Path, url: str, *args: str) -> str:
    cmd = [
        CHROMIUM,
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={tmp / 'chromium'}",
        "--virtual-time-budget=3000",
        *args,
        url,
    ]
    if os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def events(port: int) -> list[dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/events", timeout=5) as r:
        return json.loads(r.read())


def test_the_status_page_shows_cameras_and_alerts_in_a_real_browser(tmp_path: Path):
    port = free_port()
    args = (
        "run",
        "--camera",
        "synth://demo",
        "--fast",
        "--cooldown",
        "0",
        "--http",
        str(port),
        "--snapshots",
        "--state-dir",
        str(tmp_path / "state"),
    )
    with EdgeHF(tmp_path, *args) as run:
        assert wait_until(lambda: any(e["event"] == "start" for e in events(port)), 60), (
            run.stderr()
        )
        url = f"http://127.0.0.1:{port}/"
        dom = chromium(tmp_path, url, "--dump-dom")
        assert '<tr class="camera"><td>demo</td>' in dom, dom[-3000:]
        assert '<li class="alert-start">' in dom and " demo  fall  start " in dom
        assert '<img src="/snapshots/demo-fall-' in dom  # the alert's snapshot, shown
        assert '<img class="frame" alt="demo" src="/api/frame/demo?t=' in dom
        shot = tmp_path / "status.png"
        chromium(tmp_path, url, "--window-size=1000,1000", f"--screenshot={shot}")
        assert run.signal(15) == 0
    image = cv2.imread(str(shot))
    assert image is not None and image.shape[:2] == (1000, 1000)
    assert image.std() > 10  # text, tables and colours, not one flat colour
    red = (image[:, :, 2] > 150) & (image[:, :, 1] < 80) & (image[:, :, 0] < 80)
    assert red.sum() > 50  # the red edge of an alert's line
    if os.environ.get("EDGE_HF_SCREENSHOT"):
        shutil.copy(shot, os.environ["EDGE_HF_SCREENSHOT"])
