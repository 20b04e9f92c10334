"""Trusted answer keys and policy grading for the unit notebooks' hidden test cells.

The notebook's hidden tests run inside the grading kernel, next to code the student wrote, so they
do not import this module there: they start ``python -I -m grader.nbcheck ...`` (isolated mode:
the student's folder is not on ``sys.path``, so a file in the submission cannot stand in for this
package) and read one JSON document from its stdout.

    python -I -m grader.nbcheck expected --unit unit07 CASE       -> the answer key for CASE
    python -I -m grader.nbcheck policies --unit unit07 --submission policies.py
                                                                  -> {"score", "maxScore", "text"}

Every answer key is computed at call time with the lab engine and the reference policies; none
is stored. The key's shape is the shape the notebook asks the student to fill in.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import reference
from .cases import load_grading
from .grading import GradingError, grade_submission
from .units import Unit, UnitError, load_unit


def _runs(unit: Unit, trace: str, params: dict[str, dict], **device) -> dict[str, dict]:
    """Reference run entries by policy name, for every policy of the unit."""
    # An absolute path: a file named like the trace in the caller's folder must not stand in.
    parsed = reference.load_trace(unit, str((unit.lab_dir / "traces" / f"{trace}.json").resolve()))
    profile = reference.device_profile(unit, **device)
    return {
        spec["name"]: reference.run_reference(
            unit, parsed, spec["name"], params.get(spec["name"], {}), profile
        )
        for spec in unit.policies
    }


def _by_id(run: dict) -> dict[str, dict]:
    return {request["id"]: request for request in run["requests"]}


def _max_gap(times: list[float]) -> float | None:
    """Longest interval between consecutive token times (None for a single token)."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return max(gaps) if gaps else None


def mixed_key(unit: Unit) -> dict:
    """Deliverable 1: arrival, first token, finish of every request and A's longest ITL."""
    runs = _runs(unit, "mixed", {"chunked": {"chunk": 2}})
    times = {
        policy: {
            rid: {
                "arrival": req["arrivalMs"],
                "first": req["tokenTimesMs"][0],
                "finish": req["tokenTimesMs"][-1],
            }
            for rid, req in _by_id(run).items()
        }
        for policy, run in runs.items()
    }
    itl = {policy: _max_gap(_by_id(run)["A"]["tokenTimesMs"]) for policy, run in runs.items()}
    return {"times": times, "aMaxItl": itl}


def prefill_only_key(unit: Unit) -> dict:
    """Deliverable 2: the finish time under each overhead and the number of submissions."""
    key: dict = {}
    for label, overhead in (("0.25", 0.25), ("0", 0.0)):
        runs = _runs(unit, "prefill-only", {"chunked": {"chunk": 2}}, overhead_ms=overhead)
        key[label] = {
            policy: max(req["tokenTimesMs"][-1] for req in run["requests"])
            for policy, run in runs.items()
        }
        if label == "0.25":
            key["submissions"] = {policy: len(run["events"]) for policy, run in runs.items()}
    return key


def unseen_key(unit: Unit) -> dict:
    """Deliverable 3: U2's first-token time and U1's longest stall with ``--chunk 4``."""
    runs = _runs(unit, "unseen", {"chunked": {"chunk": 4}})
    return {
        "U2_first": {policy: _by_id(run)["U2"]["tokenTimesMs"][0] for policy, run in runs.items()},
        "U1_stall": {
            policy: _max_gap(_by_id(run)["U1"]["tokenTimesMs"]) for policy, run in runs.items()
        },
    }


# Notebook cases by unit: the answer keys each unit's notebook asks for.
KEYS: dict[str, dict[str, Callable[[Unit], dict]]] = {
    "unit07": {
        "mixed": mixed_key,
        "prefill-only": prefill_only_key,
        "unseen": unseen_key,
    },
}


def answer_key(unit: Unit, case: str) -> dict:
    """The answer key of one notebook case of ``unit``."""
    cases = KEYS.get(unit.id)
    if cases is None:
        raise UnitError(f"unit {unit.id} has no notebook answer keys")
    if case not in cases:
        raise UnitError(f"unknown notebook case '{case}' (known: {', '.join(cases)})")
    return cases[case](unit)


def hidden_cases(unit: Unit) -> list[str]:
    """Ids of the unit's hidden graded cases (the public ones are the lab's own tests)."""
    return [case.id for case in load_grading(unit).cases if case.hidden]


def grade_policies(unit: Unit, policies_file: Path) -> dict:
    """Grade a student's policies file with the sandboxed grader on the unit's hidden cases.

    The file is copied into a fresh folder holding only that file, which is what
    ``grader.grading`` takes as a submission; the feedback text names no hidden trace data.
    """

    policies_file = Path(policies_file)
    if policies_file.is_symlink() or not policies_file.is_file():
        raise UnitError(f"{policies_file}: not a regular file")
    with tempfile.TemporaryDirectory(prefix="infralab-nb-") as tmp:
        submission = Path(tmp)
        shutil.copyfile(policies_file, submission / "policies.py")
        report = grade_submission(unit, submission, cases=hidden_cases(unit))
    return {"score": report.score, "maxScore": report.max_score, "text": report.text()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.nbcheck", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    expected = commands.add_parser("expected", help="print the answer key of a notebook case")
    expected.add_argument("--unit", required=True)
    expected.add_argument("case", help="a notebook case, e.g. mixed")
    policies = commands.add_parser("policies", help="grade a policies file on the graded cases")
    policies.add_argument("--unit", required=True)
    policies.add_argument("--submission", required=True, help="the student's policies.py")
    args = parser.parse_args(argv)
    try:
        unit = load_unit(args.unit)
        if args.command == "expected":
            result = answer_key(unit, args.case)
        else:
            result = grade_policies(unit, Path(args.submission))
    except (UnitError, GradingError) as exc:
        print(f"nbcheck: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
