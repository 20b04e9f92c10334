#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image (as root, Ubuntu).
# It installs Python >= 3.11, bubblewrap (the sandbox; the grader falls back to rlimits and an
# unprivileged uid where bubblewrap cannot create namespaces) and the grader's dependencies.
set -euo pipefail
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${INFRALAB_AUTOGRADER_ROOT:-/autograder}"

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends bubblewrap util-linux ca-certificates

PYTHON=""
for candidate in python3 python3.12 python3.11; do
  if command -v "$candidate" >/dev/null &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    PYTHON="$(command -v "$candidate")"
    break
  fi
done
if [ -z "$PYTHON" ]; then
  apt-get install -y --no-install-recommends python3.11 python3.11-venv
  PYTHON="$(command -v python3.11)"
else
  apt-get install -y --no-install-recommends "$(basename "$PYTHON")-venv" || true
fi

"$PYTHON" -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install --no-cache-dir -r "$SOURCE/requirements.txt"
# The grader's own files stay unreadable to the sandboxed child's unprivileged uid.
chmod 700 "$SOURCE"
