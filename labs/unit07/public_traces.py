"""Unit 07's varied public trace: ``unseen``, the trace a student predicts before running it.

``unseen()`` is the trace the lab ships (``starter/unit07/traces/unseen.json``, written by hand);
``unseen(seed=N)`` is a student's variant of it (unit.yaml ``variants``): the same four roles
(U1 streams from 0 ms, U2 brings a long prompt just after, U3 and U4 arrive later, U4 answers
in one token), with lengths and arrival times drawn from ``random.Random(seed)``.
"""

from __future__ import annotations

import json
import random

FIXED = (("U1", 0, 3, 8), ("U2", 1, 10, 3), ("U3", 3.5, 2, 5), ("U4", 9, 6, 1))


def unseen(seed: int | None = None) -> dict:
    """The shipped trace (``seed`` None), else a variant drawn from ``seed``."""
    if seed is None:
        rows = FIXED
    else:
        rng = random.Random(seed)
        rows = (
            ("U1", 0, rng.randint(2, 4), rng.randint(6, 10)),
            ("U2", rng.choice((0.5, 1, 1.5, 2)), rng.randint(8, 14), rng.randint(2, 4)),
            ("U3", rng.choice((3, 3.5, 4, 4.5)), rng.randint(1, 3), rng.randint(3, 6)),
            ("U4", rng.choice((8, 9, 10, 11)), rng.randint(4, 8), 1),
        )
    keys = ("id", "arrivalMs", "inputTokens", "outputTokens")
    return {
        "name": "unseen",
        "description": "Four requests the lesson never worked through: U1 streams while a "
        f"{rows[1][2]}-token prompt (U2) and two later prompts compete for prefill. Predict "
        "before you run it with --chunk 4.",
        "requests": [dict(zip(keys, row, strict=True)) for row in rows],
    }


def render(doc: dict) -> str:
    """The file text, one request a line, as the shipped file is written."""
    lines = [json.dumps(r, ensure_ascii=False) for r in doc["requests"]]
    head = f'  "name": {json.dumps(doc["name"])},\n'
    head += f'  "description": {json.dumps(doc["description"], ensure_ascii=False)},\n'
    return "{\n" + head + '  "requests": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"
