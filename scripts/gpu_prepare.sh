#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a GPU machine that reaches no package
# registry: run it HERE (a machine with .venv and the registries), once per
# checkout; it is safe to re-run (present files are kept).
#
#   bash scripts/gpu_prepare.sh
#
# - .whl/      the wheels the device image lacks (it has Python 3.12, torch,
#              torchvision, numpy, rich and typer), pinned to the versions in .venv:
#              what `python3 -m nasmlcn search|calibrate`, the benchmarks and
#              pytest import there. plotly is left out (about 10 MB): a search then
#              logs one warning instead of writing its dashboard figures.
# - .gpudata/  Fashion-MNIST's four .gz files in torchvision's layout
#              (FashionMNIST/raw/), gpu_check.sh unpacks them on the machine.
# Both are excluded from git (.git/info/exclude), so the device tool sends them only
# when its call names them: carry [".whl", ".gpudata"] (64 MiB at most in all).
set -euo pipefail
cd "$(dirname "$0")/.."

# Python-level names as `pip list` spells them; every one must be installed in .venv.
# typing-extensions and pygments are in the image (torch's, rich's), maybe older than
# alembic (>= 4.12) and pytest (>= 2.15) ask: the newer copies shadow them harmlessly.
RUNTIME=(optuna sqlalchemy alembic mako greenlet colorlog tqdm pyyaml markupsafe packaging typing-extensions)
TESTS=(pytest pluggy iniconfig pytest-timeout pytest-xdist execnet pygments)
GZ_FILES=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
MAX_MB=60

say() { printf '\033[1m[gpu-prepare]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[gpu-prepare] error:\033[0m %s\n' "$*" >&2; exit 1; }

[[ -x .venv/bin/pip ]] || die "no .venv here: run scripts/setup.sh --dev first"

# 1. Wheels ---------------------------------------------------------------------
freeze=$(.venv/bin/pip list --format=freeze 2>/dev/null)
norm() { tr '[:upper:]_.' '[:lower:]--' <<<"$1"; }
pinned() {  # NAME -> NAME==VERSION as installed in .venv
  local want line
  want=$(norm "$1")
  while IFS= read -r line; do
    [[ "$(norm "${line%%==*}")" == "$want" ]] && { echo "$line"; return 0; }
  done <<<"$freeze"
  return 1
}
mkdir -p .whl
keep=()  # the file-name prefixes of the pinned wheels: anything else in .whl/ goes
PIP=(.venv/bin/pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 -d .whl)
for name in "${RUNTIME[@]}" "${TESTS[@]}"; do
  spec=$(pinned "$name") || die "$name is not installed in .venv (scripts/setup.sh --dev)"
  keep+=("$(tr '[:upper:]-.' '[:lower:]__' <<<"${spec%%==*}")-${spec#*==}-")
  # a cp312 manylinux wheel first; then a newer manylinux tag (pip counts older
  # glibc versions in); then whatever pure-Python wheel pip finds for 3.12
  "${PIP[@]}" --implementation cp --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 "$spec" 2>/dev/null \
    || "${PIP[@]}" --implementation cp --platform manylinux_2_28_x86_64 "$spec" 2>/dev/null \
    || "${PIP[@]}" "$spec" \
    || die "pip could not download a Python 3.12 x86_64 wheel of $spec"
done
for wheel in .whl/*.whl; do  # a version left from an earlier run would install twice
  base=$(basename "$wheel" | tr '[:upper:]' '[:lower:]')
  stale=1
  for prefix in "${keep[@]}"; do [[ "$base" == "$prefix"* ]] && stale=0; done
  ((stale)) && { say "removing $wheel (not pinned in .venv)"; rm -f "$wheel"; }
done
say "wheels: $(find .whl -type f -name '*.whl' | wc -l) in .whl/"

# 2. Fashion-MNIST ----------------------------------------------------------------
# Where the project takes it from (nasmlcn/data/_torchvision.py): Debian's
# dataset-fashion-mnist package, else the unpacked files in the data directory.
debian=${NASMLCN_DEBIAN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
raw_dir="${NASMLCN_DATA_DIR:-$HOME/.cache/nasmlcn/data}/FashionMNIST/raw"
target=.gpudata/FashionMNIST/raw
mkdir -p "$target"
for gz in "${GZ_FILES[@]}"; do
  [[ -s "$target/$gz" ]] && continue
  if [[ -f "$debian/$gz" ]]; then
    cp "$debian/$gz" "$target/$gz"
  elif [[ -f "$raw_dir/$gz" ]]; then
    cp "$raw_dir/$gz" "$target/$gz"
  elif [[ -f "$raw_dir/${gz%.gz}" ]]; then
    gzip -c "$raw_dir/${gz%.gz}" >"$target/$gz"
  else
    die "Fashion-MNIST's $gz is neither in $debian nor in $raw_dir (scripts/setup.sh prepares it)"
  fi
done
# only the .gz files travel (a dry run of gpu_check.sh unpacks elsewhere; older ones here)
find .gpudata -type f ! -name '*.gz' -delete
say "data: ${GZ_FILES[*]} in $target/"

# 3. Keep both out of git ---------------------------------------------------------
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
touch "$exclude"
for path in /.whl/ /.gpudata/; do
  grep -qxF "$path" "$exclude" || echo "$path" >>"$exclude"
done

# 4. Size -------------------------------------------------------------------------
whl_kb=$(du -sk .whl | cut -f1)
data_kb=$(du -sk .gpudata | cut -f1)
total_mb=$(((whl_kb + data_kb + 1023) / 1024))
say "size: .whl $((whl_kb / 1024)) MB + .gpudata $((data_kb / 1024)) MB = $total_mb MB (device carry limit: 64 MiB with the working tree)"
((total_mb <= MAX_MB)) || die "$total_mb MB is over the $MAX_MB MB this script allows"
echo "$total_mb MB"
