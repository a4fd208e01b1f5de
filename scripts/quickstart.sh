#!/usr/bin/env bash
# Set up everything, then run the main job on the embedded defaults: train the
# default MLCN (2 mlcn1 lanes of width 4) on Fashion-MNIST for 3 epochs and report
# test accuracy (about 4 minutes on 2 CPU cores). Extra arguments go to
# 'nasmlcn train', e.g. scripts/quickstart.sh --epochs 10 --json
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/nasmlcn train --dataset fashion-mnist --epochs 3 --out "runs/quickstart-$(date +%Y%m%d-%H%M%S)" "$@"
