"""Trusted answer keys and policy grading for the unit notebooks' hidden test cells.

The notebook's hidden tests run inside the grading kernel, next to code the student wrote, so
they do not import this module there: they start ``python -I -m grader.course.nbcheck ...``
(isolated mode: the student's folder is not on ``sys.path``, so a file in the submission cannot
stand in for this package) and read one JSON document from its stdout.

    python -I -m grader.course.nbcheck expected --unit UNIT CASE  -> the answer key for CASE
    python -I -m grader.course.nbcheck policies --unit UNIT --submission policies.py
                                                                  -> {"score", "maxScore", "text"}

The answer keys are the unit's: a plug-in file named by ``notebook.answer_keys`` in unit.yaml
(``labs/<unit>/...``) defines ``KEYS = {case: function(unit) -> dict}``; the helpers below
(``reference_runs``, ``by_id``, ``max_gap``) serve it. Every key is computed at call time with
the engine and the reference policies; none is stored.
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

from .. import reference
from ..cases import load_grading
from ..grading.grade import GradingError, grade_submission
from ..plugins import load_plugin
from ..units import Unit, UnitError, load_unit


def reference_runs(unit: Unit, trace: str, params: dict[str, dict], **device) -> dict[str, dict]:
    """Reference run entries by policy name, for every policy of the unit, on a public trace."""
    # An absolute path: a file named like the trace in the caller's folder must not stand in.
    parsed = reference.load_trace(unit, str((unit.lab_dir / "traces" / f"{trace}.json").resolve()))
    profile = reference.device_profile(unit, **device)
    return {
        spec["name"]: reference.run_reference(
            unit, parsed, spec["name"], params.get(spec["name"], {}), profile
        )
        for spec in unit.policies
    }


def by_id(run: dict) -> dict[str, dict]:
    """A run's request entries by request id."""
    return {request["id"]: request for request in run["requests"]}


def max_gap(times: list[float]) -> float | None:
    """Longest interval between consecutive token times (None for a single token)."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return max(gaps) if gaps else None


def answer_keys(unit: Unit) -> dict[str, Callable[[Unit], dict]]:
    """The unit's notebook cases: ``KEYS`` of the plug-in named by ``notebook.answer_keys``."""
    relative = unit.doc.get("notebook", {}).get("answer_keys")
    if relative is None:
        raise UnitError(f"unit {unit.id} has no notebook answer keys")
    keys = getattr(load_plugin(unit, relative, "answer-key plug-in"), "KEYS", None)
    if not isinstance(keys, dict):
        raise UnitError(f"unit {unit.id}: {relative} must define KEYS = {{case: function}}")
    return keys


def answer_key(unit: Unit, case: str) -> dict:
    """The answer key of one notebook case of ``unit``."""
    cases = answer_keys(unit)
    if case not in cases:
        raise UnitError(f"unknown notebook case '{case}' (known: {', '.join(cases)})")
    return cases[case](unit)


def hidden_cases(unit: Unit) -> list[str]:
    """Ids of the unit's hidden graded cases (the public ones are the lab's own tests)."""
    return [case.id for case in load_grading(unit).cases if case.hidden]


def grade_policies(unit: Unit, policies_file: Path) -> dict:
    """Grade a student's policies file with the sandboxed grader on the unit's hidden cases.

    The file is copied into a fresh folder holding only that file, which is what
    ``grader.grading.grade`` takes as a submission; the feedback text names no hidden trace data.
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
    parser = argparse.ArgumentParser(prog="python -m grader.course.nbcheck", description=__doc__)
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
