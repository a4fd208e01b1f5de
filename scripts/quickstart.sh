#!/usr/bin/env bash
# Set up everything, then run the main job on the embedded defaults at small scale:
# a 4-trial search for MLCNs that fit 8 K80s of 12 GB, each candidate really
# trained for 1 epoch on a 5,000-image Fashion-MNIST subset (under 10 minutes on
# 2 CPU cores). The study lands in studies/nasmlcn.db; re-running continues it.
# Extra arguments go to 'nasmlcn search', e.g. scripts/quickstart.sh --trials 8 --json
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/nasmlcn search --devices 8xK80 --mem 12GB --flops 0.5x \
  --trials 4 --epochs 1 --train-limit 5000 --val-limit 1000 "$@"
