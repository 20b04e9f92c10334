"""Unit 07's varied public traces: ``mixed`` and ``prefill-only`` (the lesson's two examples,
notebook deliverables 1 and 2) and ``unseen`` (the trace a student predicts before running it).

Each builder with no seed gives the trace the lab ships (``starter/unit07/traces/<name>.json``,
written by hand; the lesson and its figures read those files); ``builder(seed=N)`` is a
student's variant of it (unit.yaml ``variants``), drawn from ``random.Random(seed)``. A variant
keeps its trace's roles and teaching point, and no draw gives the shipped requests:

- ``mixed``: A arrives at 0 ms with a prompt that fits one chunk of 2 and a long output, L
  brings a long prompt while A streams, S a short one while L is in prefill. Under
  ``--chunk 2`` A's TTFT is unchanged, its longest ITL is shorter, and L and S get their first
  token later than under fcfs (tests/unit07/test_u07_variants.py checks 250 draws; docs/ta.md
  says what a run over every combination found).
- ``prefill-only``: one request that never decodes (one output token), so chunking only adds
  submissions: with overhead it finishes later than fcfs, without it at the same time.
- ``unseen``: U1 streams from 0 ms, U2 brings a long prompt just after, U3 and U4 arrive later,
  U4 answers in one token.
"""

from __future__ import annotations

import json
import random

MIXED = (("A", 0, 2, 12), ("L", 2, 12, 2), ("S", 4, 1, 4))
PREFILL_ONLY = (("P", 0, 12, 1),)
UNSEEN = (("U1", 0, 3, 8), ("U2", 1, 10, 3), ("U3", 3.5, 2, 5), ("U4", 9, 6, 1))

# What a mixed draw may take: every combination keeps the claims above (checked once over all of
# them; the test checks 250 draws).
A_INPUT, A_OUTPUT = (1, 2), (10, 11, 12, 13, 14)
L_ARRIVAL, L_INPUT, L_OUTPUT = (1, 1.5, 2, 2.5, 3), tuple(range(9, 17)), (2, 3)
S_AFTER_L, S_INPUT, S_OUTPUT = (1.5, 2, 2.5, 3), (1, 2), (3, 4, 5)
PREFILL_ONLY_INPUT = tuple(n for n in range(8, 25) if n != PREFILL_ONLY[0][2])


def mixed(seed: int | None = None) -> dict:
    """The lesson's A/L/S example (``seed`` None), else a variant drawn from ``seed``."""
    rows = MIXED
    if seed is not None:
        rng = random.Random(seed)
        while rows == MIXED:  # a draw of the shipped requests is drawn again
            rows = draw_mixed(rng)
    return _trace(
        "mixed",
        "A is already streaming when the long prompt L arrives; the short question S comes "
        "right after.",
        rows,
    )


def draw_mixed(rng: random.Random) -> tuple:
    """One draw of ``mixed``'s rows (the shipped rows among them: ``mixed`` draws again)."""
    arrive_l = rng.choice(L_ARRIVAL)
    return (
        ("A", 0, rng.choice(A_INPUT), rng.choice(A_OUTPUT)),
        ("L", arrive_l, rng.choice(L_INPUT), rng.choice(L_OUTPUT)),
        ("S", arrive_l + rng.choice(S_AFTER_L), rng.choice(S_INPUT), rng.choice(S_OUTPUT)),
    )


def prefill_only(seed: int | None = None) -> dict:
    """The lesson's counterexample (``seed`` None), else one with a prompt drawn from ``seed``
    (never the shipped 12 tokens)."""
    rows = PREFILL_ONLY
    if seed is not None:
        rows = (("P", 0, random.Random(seed).choice(PREFILL_ONLY_INPUT), 1),)
    return _trace(
        "prefill-only",
        f"One request with a {rows[0][2]}-token prompt and a single output token: nothing to "
        "protect, so chunking only adds submissions.",
        rows,
    )


def unseen(seed: int | None = None) -> dict:
    """The shipped trace (``seed`` None), else a variant drawn from ``seed``."""
    if seed is None:
        rows = UNSEEN
    else:
        rng = random.Random(seed)
        rows = (
            ("U1", 0, rng.randint(2, 4), rng.randint(6, 10)),
            ("U2", rng.choice((0.5, 1, 1.5, 2)), rng.randint(8, 14), rng.randint(2, 4)),
            ("U3", rng.choice((3, 3.5, 4, 4.5)), rng.randint(1, 3), rng.randint(3, 6)),
            ("U4", rng.choice((8, 9, 10, 11)), rng.randint(4, 8), 1),
        )
    return _trace(
        "unseen",
        "Four requests the lesson never worked through: U1 streams while a "
        f"{rows[1][2]}-token prompt (U2) and two later prompts compete for prefill. Predict "
        "before you run it with --chunk 4.",
        rows,
    )


def _trace(name: str, description: str, rows) -> dict:
    keys = ("id", "arrivalMs", "inputTokens", "outputTokens")
    requests = [dict(zip(keys, row, strict=True)) for row in rows]
    return {"name": name, "description": description, "requests": requests}


def render(doc: dict) -> str:
    """The file text, one request a line, as the shipped files are written."""
    lines = [json.dumps(r, ensure_ascii=False) for r in doc["requests"]]
    head = f'  "name": {json.dumps(doc["name"])},\n'
    head += f'  "description": {json.dumps(doc["description"], ensure_ascii=False)},\n'
    return "{\n" + head + '  "requests": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"
