#!/usr/bin/env bash
# The linters CI runs after the tests: ruff (lint and format) and mypy (the package,
# tests and benchmarks; see [tool.mypy] in pyproject.toml). Needs .venv (scripts/setup.sh --dev).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
