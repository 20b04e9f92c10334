"""Writes a forged run file at import (every token right at arrival, no events) to the path
given by --output, then exits 0 before anything is simulated.

EARNS: none
"""

import json
import os
import sys

argv = sys.argv
trace_path = argv[argv.index("--trace") + 1]
output = argv[argv.index("--output") + 1]
policy = argv[argv.index("--policy") + 1] if "--policy" in argv else "fcfs"
with open(trace_path, encoding="utf-8") as handle:
    trace = json.load(handle)

requests = []
for request in trace["requests"]:
    times = [float(request["arrivalMs"])] * request["outputTokens"]
    requests.append(
        {
            **request,
            "tokenTimesMs": times,
            "firstTokenMs": times[0],
            "finishMs": times[-1],
            "ttftMs": 0.0,
            "itlMs": [0.0] * (len(times) - 1),
            "maxItlMs": 0.0 if len(times) > 1 else None,
            "tpotMs": 0.0 if len(times) > 1 else None,
            "e2eMs": 0.0,
        }
    )
names = ["fcfs", "chunked"] if policy == "both" else [policy]
runs = [
    {
        "policy": name,
        "params": {},
        "device": {},
        "fault": None,
        "requests": requests,
        "events": [],
        "summary": {},
    }
    for name in names
]
with open(output, "w", encoding="utf-8") as handle:
    json.dump({"formatVersion": 1, "trace": trace, "runs": runs}, handle)
print(f"wrote {output}")
os._exit(0)
