#!/usr/bin/env bash
# Set up everything the tests need, check style, and run the whole test suite on every core.
#   bash scripts/test.sh [PYTEST ARGS...]         the whole suite (what CI runs: .ci/run)
#   bash scripts/test.sh --fast [PYTEST ARGS...]  the fast tier: the tests marked `fast` (each
#                                                 package's own unit tests), a few minutes
# Two pytest passes: every test not marked `serial` on all cores (pytest-xdist), then the
# `serial` ones one at a time (they cannot share the machine; each says why: pytest --markers,
# and the reason on its mark). Together they are the whole suite; the whole run ends with its
# slowest 20 tests and their times. The fast tier is one pass of `fast and not serial`; on a
# fresh clone it sets up first, as the whole run does (setup.sh --if-needed: skipped once done).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fast" ]; then
  shift
  bash scripts/setup.sh --if-needed test
  started=$(date +%s)
  echo "[test] ruff format --check"
  .venv/bin/ruff format --check .
  echo "[test] ruff check"
  .venv/bin/ruff check .
  echo "[test] pytest -n auto --dist loadgroup -m 'fast and not serial' $* (the fast tier)"
  code=0
  .venv/bin/python -m pytest -n auto --dist loadgroup -m "fast and not serial" "$@" || code=$?
  echo "[test] the fast tier took $(( $(date +%s) - started )) s"
  exit "$code"
fi

# The estimate, before anything starts: the last whole passing run on this machine, else what a
# fresh clone took on 2 otherwise idle cores (measured; the setup is mostly installs: PyTorch).
FRESH_SETUP_S=140
FRESH_TESTS_S=880
last=.pytest_cache/infralab-test-seconds
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
minutes() { echo $(( ($1 + 59) / 60 )); }
if [ -s "$last" ] && [ -x .venv/bin/python ]; then
  echo "[test] this will take about $(minutes "$(cat "$last")") min" \
    "(the tests' time in the last whole run here: $(cat "$last") s)"
else
  echo "[test] this will take about $(minutes $((FRESH_SETUP_S + FRESH_TESTS_S))) min:" \
    "about $(minutes "$FRESH_SETUP_S") min of setup and $(minutes "$FRESH_TESTS_S") min of tests," \
    "as measured on a fresh clone on 2 idle cores; more while other work shares them, less with more" \
    "cores (this machine: $cores)"
fi

bash scripts/setup.sh test
echo "[test] ruff format --check"
.venv/bin/ruff format --check .
echo "[test] ruff check"
.venv/bin/ruff check .

started=$(date +%s)
parallel=0 serial=0
times=.pytest_cache/infralab-times
mkdir -p "$times" && rm -f "$times"/*.xml
echo "[test] pytest -n auto --dist loadgroup -m 'not serial' $*"
.venv/bin/python -m pytest -n auto --dist loadgroup -m "not serial" \
  --junitxml="$times/parallel.xml" "$@" || parallel=$?
echo "[test] pytest -m serial $* (one at a time)"
.venv/bin/python -m pytest -p no:xdist -m serial --junitxml="$times/serial.xml" "$@" || serial=$?
elapsed=$(( $(date +%s) - started ))
.venv/bin/python scripts/slowest_tests.py 20 "$times"/*.xml || true  # a report, not a check
echo "[test] pytest took ${elapsed} s"
# 5 is pytest's "no test selected": fine for one pass, not for both
if [ "$parallel" = 5 ] && [ "$serial" = 5 ]; then exit 5; fi
[ "$parallel" = 5 ] && parallel=0
[ "$serial" = 5 ] && serial=0
if [ "$parallel" = 0 ] && [ "$serial" = 0 ] && [ $# = 0 ]; then
  mkdir -p .pytest_cache && echo "$elapsed" > "$last"  # a whole, passing run: the next estimate
fi
[ "$parallel" = 0 ] && [ "$serial" = 0 ]
