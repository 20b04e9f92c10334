#!/usr/bin/env bash
# Set up and run the demo: the lessons' comparisons with the reference solutions (units 07, 08).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
run=(.venv/bin/infralab simulate --unit unit07 --reference)
"${run[@]}" --trace mixed --policy both --chunk 2 --output runs/mixed.json
echo
"${run[@]}" --trace prefill-only --policy both --chunk 2 --output runs/prefill-only.json
echo
"${run[@]}" --trace prefill-only --policy both --chunk 2 --overhead-ms 0
echo
# Unit 08: the same burst on a 256-page KV pool, reserving the declared maximum (budgeted) vs
# growing pages on demand with recompute preemption (paged).
run08=(.venv/bin/infralab simulate --unit unit08 --reference --trace burst
  --device-profile starter/unit08/devices/pool-256.json)
"${run08[@]}" --policy budgeted --output runs/burst-budgeted.json
echo
"${run08[@]}" --policy paged --output runs/burst-paged.json
