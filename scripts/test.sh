#!/usr/bin/env bash
# Set up everything the tests need, then run the test suite (CI runs exactly this).
# Extra arguments go to pytest, e.g. scripts/test.sh -m slow, or -n 0 for one process.
# The tests run in NASMLCN_TEST_WORKERS processes (default 2, pytest-xdist); a test
# module stays in one process (--dist loadscope), so its module fixtures run once.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
# Bytecode for the package and the tests, written once: where PYTHONDONTWRITEBYTECODE
# is set (it is on the project's machines) every process a test starts would compile
# nasmlcn from source again (0.45 s against 0.27 s to import the search and the CLI).
.venv/bin/python -m compileall -q -j 0 nasmlcn tests benchmarks >/dev/null
exec .venv/bin/python -m pytest -n "${NASMLCN_TEST_WORKERS:-2}" --dist loadscope "$@"
