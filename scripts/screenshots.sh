#!/usr/bin/env bash
# Regenerates the README's screenshots (docs/screenshots/*.png): the exported HTML
# report and optuna-dashboard (nasmlcn's figures, a trial's note) on one study.
#
#   scripts/screenshots.sh                # on a fresh 500-trial proxy study (~1 min;
#                                         # latency budget 15 ms, so some are infeasible)
#   STORAGE=sqlite:///studies/nasmlcn.db STUDY=<name> scripts/screenshots.sh
#
# Needs Debian's chromium and the dev extra (playwright); downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-docs/screenshots}

work=$(mktemp -d)
pid=
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

if [[ -z "${STORAGE:-}" ]]; then
  STORAGE="sqlite:///$work/study.db"
  STUDY=nasmlcn-8xK80-proxy
  echo "making a 500-trial proxy study ..." >&2
  "$PY" -m nasmlcn search --evaluator proxy --trials 500 --epochs 5 --devices 8xK80 \
    --objectives accuracy,latency,memory --latency-budget 15ms --sampler nsga2 --seed 0 \
    --storage "$STORAGE" --study "$STUDY" -q >/dev/null
fi
: "${STUDY:?set STUDY to the study name}"

"$PY" -m nasmlcn export --study "$STUDY" --storage "$STORAGE" --out "$work/export" --format html >&2
best=$("$PY" -m nasmlcn best --study "$STUDY" --storage "$STORAGE" --json \
  | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["best"][0]["number"])')

"$PY" -m nasmlcn dashboard --storage "$STORAGE" --port 0 >"$work/url" 2>"$work/dashboard.log" &
pid=$!
for _ in $(seq 120); do grep -q "http://" "$work/url" 2>/dev/null && break; sleep 0.5; done
url=$(grep -o "http://[^ ]*" "$work/url") || { cat "$work/dashboard.log" >&2; exit 1; }

"$PY" dashboards/screenshots.py --report "$work/export/report.html" --dashboard "$url" \
  --study "$STUDY" --trial "$best" --out "$OUT"
