"""Trusted answer keys and policy grading for the unit notebooks' autograded cells.

Used by the autograde step (``nbautograde``, in the grader's own process: the notebook's
kernel never reaches this module) and by the unit 08 notebook builder; as a command, for staff
who want to see a key or a policy grade:

    python -m grader.course.nbcheck expected --unit UNIT CASE  -> the answer key for CASE
        [--student ID [--secret FILE]]                         -> as ID's variant has it
    python -m grader.course.nbcheck policies --unit UNIT --submission policies.py [...]
                                                               -> {"score", "maxScore", "text"}

The answer keys are the unit's: a plug-in file named by ``notebook.answer_keys`` in unit.yaml
(``labs/<unit>/...``) defines ``KEYS = {case: function(unit) -> dict}``; the helpers below
(``reference_runs``, ``by_id``, ``max_gap``) serve it. Every key is computed with the engine and
the reference policies, then remembered in the staff's cache folder (``grader.checkcache``) under
the hash of everything it is computed from (``key_inputs``): a notebook asks for the same key in
several cells, and a class's notebooks all ask for it, so it is computed once per change of code
or data, not once per cell.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .. import checkcache, reference
from ..cases import load_grading
from ..grading.grade import GradingError, grade_submission
from ..plugins import plugin_table
from ..units import CODE_ROOT, Unit, UnitError, load_unit

KEYS_KIND = "answer-keys"  # the cache folder's kind (grader.checkcache)


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
    """The unit's notebook cases: ``KEYS`` of the answer-key plug-in."""
    return plugin_table(unit, "KEYS", "case: function")


def answer_key(unit: Unit, case: str) -> dict:
    """The answer key of one notebook case of ``unit`` (remembered: see the module's doc). For
    a student's variant, the key as that variant has it (``grader.variants.nbkeys``)."""
    from ..variants import nbkeys

    cases = answer_keys(unit)
    if case not in cases:
        raise UnitError(f"unknown notebook case '{case}' (known: {', '.join(cases)})")
    unit = nbkeys.key_unit(unit, case)
    digest = key_inputs(unit, case)
    if digest is None:
        return cases[case](unit)
    with checkcache.held(KEYS_KIND, digest):  # one process computes; the others read it
        key = checkcache.recall_doc(KEYS_KIND, digest)
        if key is None:
            key = cases[case](unit)
            checkcache.remember_doc(KEYS_KIND, digest, key)
    return key


def key_inputs(unit: Unit, case: str) -> str | None:
    """A hash of everything an answer key is computed from: the case, the Python, and every file
    of the staff code (``grader``, ``servesim``) and of the unit (its ``labs/`` folder with the
    answer-key plug-in, the solutions, the lab folder, the traces). None when a file cannot be
    read: then the key is computed, not remembered."""
    digest = hashlib.sha256(f"{unit.id}\0{case}\0{sys.version}".encode())
    roots = [CODE_ROOT / "grader", CODE_ROOT / "servesim"]
    roots += [unit.unit_dir, unit.solutions_dir, unit.lab_dir, unit.traces_dir]
    try:
        for index, root in enumerate(roots):
            for folder, subfolders, files in os.walk(root):
                subfolders[:] = sorted(d for d in subfolders if d not in ("__pycache__", "runs"))
                for name in sorted(files):
                    path = Path(folder) / name
                    label = f"{index}/{path.relative_to(root).as_posix()}"
                    digest.update(b"\0" + label.encode() + b"\0" + path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def hidden_cases(unit: Unit) -> list[str]:
    """Ids of the cases the notebook grades: the unit's hidden graded cases (the public ones
    are the lab's own tests), or every graded case while a unit has no hidden one."""
    cases = load_grading(unit).cases
    return [case.id for case in cases if case.hidden] or [case.id for case in cases]


def grade_policies(unit: Unit, files: Path | list[Path]) -> dict:
    """Grade a student's editable files with the sandboxed grader on the unit's hidden cases.

    ``files`` are the student's copies of the unit's editable files (``policies.py``, and
    whatever else unit.yaml lists); each must be a regular file named like one of them. They
    are copied into a fresh folder holding only those files, which is what
    ``grader.grading.grade`` takes as a submission. The text is the one place the notebook's
    hidden-case feedback comes from: the report's own text (``Report.text``), which names no
    hidden trace data.
    """
    files = [Path(f) for f in (files if isinstance(files, list) else [files])]
    names = [f.name for f in files]
    for path in files:
        if path.is_symlink() or not path.is_file():
            raise UnitError(f"{path}: not a regular file")
        if path.name not in unit.editable:
            raise UnitError(
                f"{path}: not an editable file of {unit.id} ({', '.join(unit.editable)})"
            )
    if len(set(names)) != len(names):
        raise UnitError(f"the same file is given twice: {', '.join(names)}")
    with tempfile.TemporaryDirectory(prefix="infralab-nb-") as tmp:
        submission = Path(tmp)
        for path in files:
            shutil.copyfile(path, submission / path.name)
        report = grade_submission(unit, submission, cases=hidden_cases(unit))
    return {"score": report.score, "maxScore": report.max_score, "text": report.text()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.course.nbcheck", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    expected = commands.add_parser("expected", help="print the answer key of a notebook case")
    expected.add_argument("--unit", required=True)
    expected.add_argument("case", help="a notebook case, e.g. mixed")
    expected.add_argument("--student", help="the key of this student's variant (roster id)")
    expected.add_argument("--secret", help="the variant secret file (docs/ta.md, Variants)")
    policies = commands.add_parser(
        "policies", help="grade the student's editable files on the hidden cases"
    )
    policies.add_argument("--unit", required=True)
    policies.add_argument(
        "--submission",
        required=True,
        nargs="+",
        help="the student's editable files (policies.py, ...)",
    )
    args = parser.parse_args(argv)
    from ..variants.identity import graded_unit

    try:
        unit = load_unit(args.unit)
        if args.command == "expected":
            if args.student is not None:
                unit = graded_unit(unit, args.student, args.secret)
            result = answer_key(unit, args.case)
        else:
            result = grade_policies(unit, [Path(f) for f in args.submission])
    except (UnitError, GradingError) as exc:
        print(f"nbcheck: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
