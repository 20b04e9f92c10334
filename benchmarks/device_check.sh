#!/usr/bin/env bash
# The one prepared device check (benchmarks/device_check.py): on a GPU, under five minutes;
# without CUDA, or with --quick, the quick CPU mode CI runs. PYTHON picks the interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "${PYTHON:-python3}" "$here/device_check.py" "$@"
