#!/usr/bin/env bash
# Set up a fresh machine for edge-hf: system packages (when root), a venv, the package itself.
# Idempotent and quick when nothing changed. Usage: scripts/setup.sh [EXTRAS]  (default dev,openvino)
# With the train extra, torch+torchvision are installed first as a matching pair
# (TORCH_PACKAGES overrides, e.g. "torch==2.9.1 torchvision==0.24.1" on aarch64).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-dev,openvino}"

# ffmpeg writes H.264 test clips and serves live test streams; mosquitto is the test broker;
# rtsp-server-perl serves RTSP on loopback; openssl makes the certificates of the MQTT TLS tests.
# (systemd-analyze, from the systemd package, checks the unit where present; tests skip without.)
need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v openssl >/dev/null || need+=(openssl)
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto mosquitto-clients)
command -v rtsp-server-perl >/dev/null || need+=(rtsp-server-perl)
# a headless Chromium renders the status page in its test (tests only: `make test`, .ci/run)
if [[ "$extras" == *dev* ]]; then
  command -v chromium >/dev/null || need+=(chromium)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing system packages; run: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
fi

py="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$py" -m venv .venv
stamp=".venv/.edge-hf-$extras-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing edge-hf[$extras] into .venv" >&2
  .venv/bin/python -m pip install -q --no-compile --upgrade pip >/dev/null
  if [[ ",$extras," == *",train,"* ]]; then
    # torch and torchvision as a matching pair before timm asks for "any torch" (docs/install.md)
    # shellcheck disable=SC2086
    .venv/bin/python -m pip install -q --no-compile ${TORCH_PACKAGES:-torch==2.14.1 torchvision==0.29.1}
  fi
  .venv/bin/python -m pip install -q --no-compile -e ".[$extras]"
  # bytecode on every core at once (pip compiles one file at a time): without it, an
  # environment with PYTHONDONTWRITEBYTECODE compiles torch anew in every test's subprocess.
  # Its status is ignored: a few files written for other Python versions (torch's py312_*)
  # do not compile here, and are never imported.
  .venv/bin/python -m compileall -q -j 0 .venv/lib >/dev/null 2>&1 || true
  rm -f .venv/.edge-hf-* && touch "$stamp"
fi
