#!/usr/bin/env bash
# Set up and run the unit 07 demo: the lesson's comparisons with the reference solution.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
run=(.venv/bin/infralab simulate --unit unit07 --reference)
"${run[@]}" --trace mixed --policy both --chunk 2 --output runs/mixed.json
echo
"${run[@]}" --trace prefill-only --policy both --chunk 2 --output runs/prefill-only.json
echo
"${run[@]}" --trace prefill-only --policy both --chunk 2 --overhead-ms 0
