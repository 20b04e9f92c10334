"""Unit 07's notebook answer keys (a plug-in: ``notebook.answer_keys`` in unit.yaml).

``grader.course.nbcheck`` loads this file by path and calls ``KEYS[case](unit)``. Every key is
computed at call time with the engine and the reference policies; its shape is the shape the
notebook asks the student to fill in.
"""

from __future__ import annotations

from grader.course.nbcheck import by_id, max_gap, reference_runs


def mixed_key(unit) -> dict:
    """Deliverable 1: arrival, first token, finish of every request and A's longest ITL."""
    runs = reference_runs(unit, "mixed", {"chunked": {"chunk": 2}})
    times = {
        policy: {
            rid: {
                "arrival": req["arrivalMs"],
                "first": req["tokenTimesMs"][0],
                "finish": req["tokenTimesMs"][-1],
            }
            for rid, req in by_id(run).items()
        }
        for policy, run in runs.items()
    }
    itl = {policy: max_gap(by_id(run)["A"]["tokenTimesMs"]) for policy, run in runs.items()}
    return {"times": times, "aMaxItl": itl}


def prefill_only_key(unit) -> dict:
    """Deliverable 2: the finish time under each overhead and the number of submissions."""
    key: dict = {}
    for label, overhead in (("0.25", 0.25), ("0", 0.0)):
        runs = reference_runs(unit, "prefill-only", {"chunked": {"chunk": 2}}, overhead_ms=overhead)
        key[label] = {
            policy: max(req["tokenTimesMs"][-1] for req in run["requests"])
            for policy, run in runs.items()
        }
        if label == "0.25":
            key["submissions"] = {policy: len(run["events"]) for policy, run in runs.items()}
    return key


def unseen_key(unit) -> dict:
    """Deliverable 3: U2's first-token time and U1's longest stall with ``--chunk 4``."""
    runs = reference_runs(unit, "unseen", {"chunked": {"chunk": 4}})
    return {
        "U2_first": {policy: by_id(run)["U2"]["tokenTimesMs"][0] for policy, run in runs.items()},
        "U1_stall": {
            policy: max_gap(by_id(run)["U1"]["tokenTimesMs"]) for policy, run in runs.items()
        },
    }


KEYS = {"mixed": mixed_key, "prefill-only": prefill_only_key, "unseen": unseen_key}
