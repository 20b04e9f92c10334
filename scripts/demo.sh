#!/usr/bin/env bash
# Set up and run the demo: the lessons' comparisons with the reference solutions (units 07-09).
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
echo
# Unit 09: three prefix groups crowded into a small pool, without a prefix cache (cancel_aware)
# and with one (prefix_paged, prefix_admit).
.venv/bin/infralab simulate --unit unit09 --reference --trace evict --policy all \
  --output runs/evict.json
echo
# What the output showed, read from the run files just written (so it cannot drift from them).
.venv/bin/python - <<'PY'
import json
from pathlib import Path


def runs(name):
    return {r["policy"]: r for r in json.loads(Path(f"runs/{name}.json").read_text())["runs"]}


def by_id(run):
    return {r["id"]: r for r in run["requests"]}


mixed = runs("mixed")
fcfs, chunked = (by_id(mixed[name]) for name in ("fcfs", "chunked"))
print("What the output showed:")
print(
    f"- unit 07, mixed: chunked prefill cuts A's longest gap between tokens (maxITL) from "
    f"{fcfs['A']['maxItlMs']:g} to {chunked['A']['maxItlMs']:g} ms, because A keeps decoding "
    f"while the prompts of L and S are prefilled in chunks; they pay with a later first token "
    f"(TTFT of L {fcfs['L']['ttftMs']:g} -> {chunked['L']['ttftMs']:g} ms)."
)
print(
    "- unit 07, prefill-only: with nothing to decode, chunking only adds one step overhead per "
    "chunk; with --overhead-ms 0 both policies finish at the same time."
)
line = []
for policy in ("budgeted", "paged"):
    (run,) = runs(f"burst-{policy}").values()
    status = [r["status"] for r in run["requests"]]
    recomputed = sum(r["recomputedTokens"] for r in run["requests"])
    line.append(
        f"{policy} completes {status.count('completed')} of {len(status)} requests "
        f"({status.count('cancelled')} cancelled at their deadline, {recomputed} tokens recomputed)"
    )
print(
    f"- unit 08, burst on a 256-page pool: {line[0]}; {line[1]}: reserving each request's "
    "declared maximum leaves pages unused that paged grows into on demand, preempting when the "
    "pool runs out."
)
evict = runs("evict")
cold, cached = (evict[name]["summary"] for name in ("cancel_aware", "prefix_paged"))
print(
    f"- unit 09, evict: sharing prefix pages cuts the median TTFT from {cold['ttftMs']['p50']:g} "
    f"to {cached['ttftMs']['p50']:g} ms and prefill steps from {cold['prefillSubmissions']} to "
    f"{cached['prefillSubmissions']}, since a hit skips the prompt's cached pages; the tokens "
    f"recomputed after preemption go from {cold['recomputedTokens']} to "
    f"{cached['recomputedTokens']}."
)
PY
cat <<'NOTE'
The run files are in runs/. What to run next:
  .venv/bin/infralab lab open --unit unit07 ~/lab07         # the lab folder, as a student gets it
  .venv/bin/infralab grade --unit unit07 solutions/unit07   # the reference gets full marks
  bash scripts/setup.sh site && .venv/bin/infralab site build   # the lesson pages and figures
  bash scripts/setup.sh runner && .venv/bin/infralab serve --unit unit09 --reference --policy cancel_aware --port 8000   # OpenAI API
NOTE
