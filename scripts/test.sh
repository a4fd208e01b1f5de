#!/usr/bin/env bash
# Set up everything the tests need, then run the test suite (CI runs exactly this).
# Extra arguments go to pytest, e.g. scripts/test.sh -m slow
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
exec .venv/bin/python -m pytest "$@"
