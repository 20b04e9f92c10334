#!/usr/bin/env bash
# Prepare a fresh machine: a virtualenv in .venv with infra-lab installed.
#   bash scripts/setup.sh                 the core: simulate, starter sync, golden, grade, release
#   bash scripts/setup.sh site traces     plus extras by job (site, traces, runner, nbgrader,
#                                         similarity)
#   bash scripts/setup.sh test            everything the test suite needs (system packages too)
#   bash scripts/setup.sh --if-needed X   the same, skipped when .venv was set up for X by this
#                                         script in this folder from today's pyproject.toml and
#                                         package-lock.json (bash scripts/test.sh --fast uses it)
# Prints one line per step, so a long install is never silent.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "[setup] $*"; }

# What a finished setup records in .venv (one line per set of extras): the extras, this folder,
# and the files that decide what gets installed. A copied or moved .venv, or a changed
# dependency, no longer matches, and the setup runs again.
STAMP=.venv/infralab-setup
stamp_line() {
  local extras
  extras=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
  echo "extras=${extras} root=$(pwd -P) $(cat pyproject.toml package-lock.json | sha256sum | cut -d' ' -f1)"
}
if_needed=0
if [ "${1:-}" = "--if-needed" ]; then
  if_needed=1
  shift
fi
if [ "$if_needed" = 1 ] && [ -x .venv/bin/python ] && [ -f "$STAMP" ] &&
  grep -qxF "$(stamp_line "$@")" "$STAMP"; then
  step "already set up for: ${*:-the core} (nothing changed since); skipping"
  exit 0
fi

step "checking python3 >= 3.11"
python3 - <<'PY' || { echo "infra-lab needs Python >= 3.11 as python3" >&2; exit 1; }
import sys
sys.exit(sys.version_info < (3, 11))
PY

extras=("$@")
for extra in "${extras[@]}"; do
  case "$extra" in
    site | traces | runner | nbgrader | similarity | test) ;;
    *) echo "setup.sh: unknown extra '$extra' (site, traces, runner, nbgrader, similarity, test)" >&2; exit 2 ;;
  esac
done
wants() { [[ " ${extras[*]} " == *" $1 "* ]]; }

if wants test; then
  # Debian packages: Chromium (and CJK fonts for its screenshots) for the browser tests,
  # bubblewrap for the grading sandbox, npm for axe-core (the accessibility audit).
  missing=()
  command -v chromium >/dev/null || missing+=(chromium)
  command -v bwrap >/dev/null || missing+=(bubblewrap)
  command -v npm >/dev/null || missing+=(npm)
  [ -d /usr/share/fonts/opentype/noto ] || missing+=(fonts-noto-cjk)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      step "installing system packages: ${missing[*]} (apt-get, can take a few minutes)"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      echo "note: ${missing[*]} not installed (needs root); the tests that use them will skip" >&2
    fi
  else
    step "system packages present: chromium, bubblewrap, npm, CJK fonts"
  fi
  # Node packages the browser tests load into the page, at the versions in package-lock.json.
  if command -v npm >/dev/null; then
    step "installing node packages for the site tests (npm ci: axe-core)"
    npm ci --silent --no-audit --no-fund
  else
    echo "note: npm not installed; the accessibility audit will skip (fails under CI)" >&2
  fi
fi

if [ -x .venv/bin/python ]; then
  step "virtualenv .venv exists"
else
  step "creating virtualenv .venv"
  python3 -m venv .venv
fi
pip() {  # quiet pip; drop the notes some pip configurations print about unused index folders
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@" \
    2> >(grep -v "^WARNING: Location .* is ignored" >&2)
}
if wants test || wants runner; then
  # The CPU build of torch for the reference runner.
  if .venv/bin/python -c "import torch" 2>/dev/null; then
    step "torch already installed"
  else
    step "installing torch (CPU build, the largest download)"
    pip "torch==2.13.0"
  fi
fi
if [ ${#extras[@]} -gt 0 ]; then
  step "installing infra-lab with extras: ${extras[*]} (what each adds: pyproject.toml, [project.optional-dependencies])"
  pip -e ".[$(IFS=,; echo "${extras[*]}")]"
else
  step "installing infra-lab (core staff tools)"
  pip -e .
fi
line=$(stamp_line "$@")
{ grep -vxF "$line" "$STAMP" 2>/dev/null || true; echo "$line"; } >"$STAMP.new"
mv "$STAMP.new" "$STAMP"
step "done: .venv is ready; try: bash scripts/demo.sh, or .venv/bin/infralab --help"
