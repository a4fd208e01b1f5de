#!/usr/bin/env bash
# Installs everything nasmlcn needs on a fresh Debian/Ubuntu machine; safe to re-run
# (each step checks what is already there and skips it).
#
#   scripts/setup.sh          # runtime: Debian packages, .venv, nasmlcn, Fashion-MNIST
#   scripts/setup.sh --dev    # the same plus the test and lint tools
#
# Environment: PYTHON (default python3), TORCH_SPEC (default the pins below),
# NASMLCN_DATA_DIR (default ~/.cache/nasmlcn/data).
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
[[ "${1:-}" == "--dev" ]] && DEV=1
PYTHON=${PYTHON:-python3}
# torch and torchvision are installed first and pinned: on the project's machines
# pip takes these from local disk; pyproject only declares ranges.
TORCH_SPEC=${TORCH_SPEC:-"torch==2.14.1 torchvision==0.29.1"}
# dataset-fashion-mnist: the data; chromium: PNG/SVG export of figures (kaleido)
# and the browser checks of the tests; with --dev, postgresql: the tests start a
# private PostgreSQL server (tests/_postgres.py).
APT_PACKAGES=(dataset-fashion-mnist chromium)
if ((DEV)); then APT_PACKAGES+=(postgresql); fi

say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[setup] error:\033[0m %s\n' "$*" >&2; exit 1; }

# 1. Debian packages -----------------------------------------------------------
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
fi
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then SUDO=(); elif sudo -n true 2>/dev/null; then SUDO=(sudo -n); else SUDO=(none); fi
  if [[ "${SUDO[0]:-}" == none ]] || ! command -v apt-get >/dev/null 2>&1; then
    die "missing Debian packages: ${missing[*]}; install them as root with: apt-get install -y ${missing[*]} (no root or apt-get here)"
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
    || { "${SUDO[@]}" apt-get update >/dev/null && "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; } \
    || die "apt-get could not install: ${missing[*]}"
elif ! command -v dpkg-query >/dev/null 2>&1; then
  say "not a Debian system: skipping ${APT_PACKAGES[*]} (torchvision will download Fashion-MNIST)"
else
  say "Debian packages present: ${APT_PACKAGES[*]}"
fi

# 2. Virtual environment -------------------------------------------------------
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found; install Python >= 3.10 or set PYTHON"
if [[ ! -x .venv/bin/python ]]; then
  say "creating .venv with $($PYTHON --version 2>&1)"
  "$PYTHON" -m venv .venv || die "could not create .venv (on Debian: apt-get install python3-venv)"
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check)
# pip here warns about every missing folder of the local package mirrors; keep
# its real messages, drop that noise.
pip_install() {
  "${PIP[@]}" install --quiet "$@" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }
  return "${PIPESTATUS[0]}"
}

# 3. Python packages -----------------------------------------------------------
if ! .venv/bin/python -c "import torch, torchvision" >/dev/null 2>&1; then
  # The pinned x86_64 torch is a CUDA build: about 5.6 GB in .venv, 6.2 GB with the
  # rest. Say so up front rather than let pip fail half-way with "No space left".
  need_kb=$((13 * 512 * 1024))
  free_kb=$(df -Pk .venv 2>/dev/null | awk 'NR==2 {print $4}')
  if [[ -n "$free_kb" && "$free_kb" -lt "$need_kb" ]]; then
    die "installing $TORCH_SPEC needs about 6.5 GB free beside .venv; $(df -Ph .venv | awk 'NR==2 {print $6}') has $((free_kb / 1024)) MB free; free some space and run this again"
  fi
  say "installing $TORCH_SPEC (about a minute from local disk)"
  # shellcheck disable=SC2086
  pip_install $TORCH_SPEC || die "pip could not install $TORCH_SPEC"
fi
# [all]: the PostgreSQL and MySQL drivers, optuna-dashboard and the ONNX exporter
# (pyproject.toml's optional extras); --dev adds the test and lint tools.
extras="[all]"
((DEV)) && extras="[all,dev]"
stamp=".venv/.nasmlcn-installed"
((DEV)) && stamp+="-dev"
want=$(sha256sum pyproject.toml | cut -d" " -f1)
installed() { [[ -f "$1" && "$(cat "$1")" == "$want" ]]; }
# a dev install also satisfies a runtime one
if ! installed "$stamp" && ! installed .venv/.nasmlcn-installed-dev; then
  say "installing nasmlcn${extras} into .venv"
  pip_install -e ".${extras}" || die "pip could not install nasmlcn${extras}"
  echo "$want" > "$stamp"
else
  say "nasmlcn${extras} already installed in .venv"
fi

# 4. Data ----------------------------------------------------------------------
.venv/bin/nasmlcn data prepare fashion-mnist >&2
say "ready: activate with 'source .venv/bin/activate' or run .venv/bin/nasmlcn"
