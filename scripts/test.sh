#!/usr/bin/env bash
# Set up everything the tests need, check style, and run the whole test suite on every core.
#   bash scripts/test.sh [PYTEST ARGS...]
# Two pytest passes: every test not marked `serial` on all cores (pytest-xdist), then the
# `serial` ones one at a time (they cannot share the machine; each says why: pytest --markers,
# and the reason on its mark). Together they are the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
echo "[test] ruff format --check"
.venv/bin/ruff format --check .
echo "[test] ruff check"
.venv/bin/ruff check .

# The estimate: the last run's time on this machine, else the figure measured on 2 cores.
last=.pytest_cache/infralab-test-seconds
cores=$(.venv/bin/python -c "import os; print(os.cpu_count() or 1)")
if [ -s "$last" ]; then
  echo "[test] the tests will take about $(( ($(cat "$last") + 59) / 60 )) min" \
    "(the last run here took $(cat "$last") s)"
else
  echo "[test] the tests will take about 4-5 min on 2 idle cores, less with more" \
    "(this machine: $cores; first run here, no timing recorded yet)"
fi

started=$(date +%s)
parallel=0 serial=0
echo "[test] pytest -n auto --dist loadgroup -m 'not serial' $*"
.venv/bin/python -m pytest -n auto --dist loadgroup -m "not serial" "$@" || parallel=$?
echo "[test] pytest -m serial $* (one at a time)"
.venv/bin/python -m pytest -p no:xdist -m serial "$@" || serial=$?
elapsed=$(( $(date +%s) - started ))
echo "[test] pytest took ${elapsed} s"
# 5 is pytest's "no test selected": fine for one pass, not for both
if [ "$parallel" = 5 ] && [ "$serial" = 5 ]; then exit 5; fi
[ "$parallel" = 5 ] && parallel=0
[ "$serial" = 5 ] && serial=0
if [ "$parallel" = 0 ] && [ "$serial" = 0 ] && [ $# = 0 ]; then
  mkdir -p .pytest_cache && echo "$elapsed" > "$last"  # a whole, passing run: the next estimate
fi
[ "$parallel" = 0 ] && [ "$serial" = 0 ]
