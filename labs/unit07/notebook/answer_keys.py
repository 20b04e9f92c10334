"""Unit 07's notebook answer keys and checks (a plug-in: ``notebook.answer_keys`` in unit.yaml).

``grader.course.nbcheck`` loads this file by path and calls ``KEYS[case](unit)``. Every key is
computed at call time with the engine and the reference policies; its shape is the shape the
notebook asks the student to fill in. ``CHECKS`` says how each autograded cell is scored from
the answers it hands in (``grader.course.nbscores``); the notebook's kernel sees neither.
"""

from __future__ import annotations

from grader.course.nbcheck import by_id, max_gap, reference_runs
from grader.course.nbscores import NUMBER, Close, Filled, Policies


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


POLICIES = ("fcfs", "chunked")


def _shape(keys, leaf=NUMBER) -> dict:
    return {key: leaf for key in keys}


CHECKS = {
    "policies_hidden": (Policies(),),
    "d1_fcfs": (Close("d1_times", "mixed", lambda key: key["times"]["fcfs"], ("fcfs",)),),
    "d1_chunked": (Close("d1_times", "mixed", lambda key: key["times"]["chunked"], ("chunked",)),),
    "d1_itl": (Close("d1_a_max_itl", "mixed", lambda key: key["aMaxItl"]),),
    "d2_prediction": (
        Filled("d2_prediction", _shape(["0.25", "0", "submissions"], _shape(POLICIES))),
    ),
    "d2_outputs": (Close("d2_outputs", "prefill-only"),),
    "d3_prediction": (Filled("d3_prediction", _shape(["U2_first", "U1_stall"], _shape(POLICIES))),),
    "d3_verified": (Close("d3_verified", "unseen"),),
}
