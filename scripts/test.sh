#!/usr/bin/env bash
# Set up everything the tests need, check style, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
echo "[test] ruff format --check"
.venv/bin/ruff format --check .
echo "[test] ruff check"
.venv/bin/ruff check .
echo "[test] pytest $*"
.venv/bin/python -m pytest "$@"
