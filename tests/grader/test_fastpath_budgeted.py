"""The fused ``budgeted`` loop (``grader.fastpath.budgeted``) against the executor with the
``budgeted`` planner: every column and table equal, on random traces, caps, page pools and
budgets, and the same cases declined. (``test_fastpath.py`` holds both to the lab engine.)"""

from __future__ import annotations

import random

import pytest
from servesim import DeviceProfile

from grader.fastpath import budgeted, planners
from grader.fastpath.executor import Unsupported, Workload, execute
from grader.fastpath.tracecolumns import read_trace

FIELDS = ("starts", "ends", "idle", "decode_steps", "chunks", "first_step", "first_decode")


def write_trace(path, rng: random.Random, count: int) -> None:
    import json

    clock, requests = 0.0, []
    for k in range(count):
        clock += rng.choice([0.0, rng.expovariate(0.05), rng.uniform(0, 400)])
        requests.append(
            {
                "id": f"r{k}",
                "arrivalMs": round(clock, 3),
                "inputTokens": rng.randint(1, 300),
                "outputTokens": rng.choice([1, rng.randint(1, 40)]),
            }
        )
    path.write_text(json.dumps({"name": "random", "requests": requests}), encoding="utf-8")


def outcome(run):
    try:
        steps = run()
    except Unsupported as exc:
        return "declined", str(exc)
    return "ran", {name: getattr(steps, name) for name in FIELDS}


@pytest.mark.parametrize("seed", range(40))
def test_fused_loop_equals_the_planner_on_the_executor(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "trace.json"
    write_trace(path, rng, rng.randint(1, 300))
    trace = read_trace(path)
    device = DeviceProfile.from_json(
        {
            "prefillMsPerToken": rng.choice([0.1, 0.037]),
            "decodeBatchMs": rng.choice([20.0, 3.3]),
            "decodeMsPerSeq": 0.05,
            "overheadMs": rng.choice([0.25, 0.0]),
            "maxActive": rng.choice([1, 4, 16, 128]),
            **({"kvPages": rng.choice([40, 200]), "pageTokens": 16} if seed % 2 else {}),
        }
    )
    work = Workload.of(trace, device)
    budget = rng.choice([1, 8, 64, 512])
    fused = outcome(lambda: budgeted.execute(work, device, budget))
    planned = outcome(
        lambda: execute(work, device, planners.budgeted(work, device, budget), capped=True)
    )
    assert fused == planned
