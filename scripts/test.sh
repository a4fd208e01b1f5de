#!/usr/bin/env bash
# Set up everything the tests need, then run the test suite (CI runs exactly this).
# Extra arguments go to pytest, e.g. scripts/test.sh -m slow, or -n 0 for one process.
# The tests run in NASMLCN_TEST_WORKERS processes (default 2, pytest-xdist); a test
# module stays in one process (--dist loadscope), so its module fixtures run once.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
exec .venv/bin/python -m pytest -n "${NASMLCN_TEST_WORKERS:-2}" --dist loadscope "$@"
