"""Unit 09's varied public trace: ``slow-readers``, streamed requests whose clients read slowly.

``slow_readers()`` (seed 909) is the trace the lab ships (``starter/unit09/traces/``);
``slow_readers(seed=N)`` is a student's variant of it (unit.yaml ``variants``), drawn by the
staff trace generator (``grader.traces.tracegen``) from the same spec with another seed.
"""

from __future__ import annotations

import json

from grader.traces.tracegen import trace_from_spec

SLOW_READERS = {
    "name": "slow-readers",
    "description": "Sixteen streamed requests on the lab device with a streaming buffer: nine of "
    "their clients read slower than the device writes, so their buffers fill and pause, and the "
    "five slowest are cancelled at the pause deadline.",
    "generate": {
        "count": 16,
        "idPrefix": "c",
        "arrivals": {"process": "poisson", "ratePerMs": 0.04},
        "inputTokens": {"dist": "uniform", "min": 60, "max": 240},
        "outputTokens": {"dist": "uniform", "min": 50, "max": 150},
        "readBytesPerS": {"dist": "choice", "values": [120, 1200, 1000000], "weights": [1, 2, 5]},
    },
}
VARIANT_DESCRIPTION = (
    "Sixteen streamed requests on the lab device with a streaming buffer: some of their clients "
    "read slower than the device writes, so their buffers fill and pause, and the slowest are "
    "cancelled at the pause deadline."
)


def slow_readers(seed: int = 909) -> dict:
    """The shipped trace (seed 909), else a variant drawn from ``seed`` (its counts of slow
    clients are the draw's, so the description does not name them)."""
    spec = json.loads(json.dumps(SLOW_READERS))
    spec["generate"]["seed"] = seed
    if seed != 909:
        spec["description"] = VARIANT_DESCRIPTION
    return trace_from_spec(spec, "labs/unit09/public_traces.py")


def render(doc: dict) -> str:
    """The file text, as the shipped file is written."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
