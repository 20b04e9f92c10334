"""``infralab golden`` and ``infralab grade``: reference results and grading against them."""

from __future__ import annotations

import sys
from pathlib import Path

from ..units import UnitError, load_unit
from .common import add_unit, show_path, stale_golden


def _golden(args, extra: list[str]) -> int:
    from ..course import golden

    unit = load_unit(args.unit)
    if args.check:
        bad = stale_golden(unit)
        for status in bad:
            print(f"{status.state.value}: {show_path(status.path)} ({status.reason})")
        if bad:
            print(f"run: infralab golden --unit {unit.id}", file=sys.stderr)
            return 1
        print("golden files are up to date")
        return 0
    changed = golden.write_golden(unit)
    for path in changed:
        verb = "wrote" if path.exists() else "removed"
        print(f"{verb} {show_path(path)}")
    if not changed:
        print("golden files are up to date")
    return 0


def add_golden(commands) -> None:
    golden_cmd = commands.add_parser(
        "golden",
        help="regenerate the golden (reference) results of every graded case",
        description="Run the reference solution on every graded case of unit.yaml and write "
        "traces/<unit>/golden/<case>.json. With --check, only report missing or stale files.",
    )
    add_unit(golden_cmd)
    golden_cmd.add_argument(
        "--check", action="store_true", help="report stale files, write nothing"
    )
    golden_cmd.set_defaults(handler=_golden)


ENVIRONMENT_EXIT = 3  # grading could not run because of the grader's environment


def _grade(args, extra: list[str]) -> int:
    from ..grading.grade import EnvironmentFailure, GradingError, grade_submission, limits_for

    if len(args.submission) > 1 or args.out:
        if args.student or args.submission_metadata:
            raise UnitError("--student/--submission-metadata grade one submission (no --out)")
        from ..grading import cohort

        return cohort.run_cli(args)
    if args.variants_by_name:
        raise UnitError("--variants-by-name grades several submissions (with --out)")
    args.submission = args.submission[0]
    unit = _graded_unit(args)

    outputs = [Path(p) for p in (args.json, args.gradescope) if p]
    for path in outputs:
        if path.is_dir():
            raise UnitError(f"{path}: is a folder, expected a file path")
    try:
        limits = limits_for(unit, args.timeout, args.all_cases)
        report = grade_submission(
            unit, Path(args.submission), cases=args.case or None, limits=limits, jobs=args.jobs
        )
    except EnvironmentFailure as exc:  # not the submission's fault: no score at all
        print(f"infralab: error: {exc}", file=sys.stderr)
        return ENVIRONMENT_EXIT
    except GradingError as exc:
        raise UnitError(str(exc)) from None
    print(report.text(staff=args.staff))
    from ..jsonio import write_json

    if args.json:
        write_json(Path(args.json), report.to_json(staff=args.staff), mode=0o600)
        print(f"wrote {args.json}")
    if args.gradescope:
        write_json(Path(args.gradescope), report.to_gradescope(), mode=0o600)
        print(f"wrote {args.gradescope}")
    return 0


def _graded_unit(args):
    """The unit, or the student's variant of it (``--student``, ``--submission-metadata``)."""
    if not (args.student or args.submission_metadata):
        return args.unit
    from ..variants import identity

    unit = load_unit(args.unit)
    student = args.student or identity.student_from_metadata(Path(args.submission_metadata))
    return identity.graded_unit(unit, student, args.secret)


def _add_variant_options(grade) -> None:
    grade.add_argument(
        "--student",
        metavar="ID",
        help="grade against this student's variant (the roster id; local grading)",
    )
    grade.add_argument(
        "--submission-metadata",
        metavar="FILE",
        help="grade against the variant of the submission's student (Gradescope's "
        "submission_metadata.json: users[0].sid, else users[0].email)",
    )
    grade.add_argument(
        "--variants-by-name",
        action="store_true",
        help="several submissions (--out): grade each against the variant of the student its "
        "name (folder name, zip stem) is",
    )
    grade.add_argument(
        "--secret",
        metavar="FILE",
        help="the course's variant secret (default: $INFRALAB_VARIANT_SECRET, else "
        "variant.secret in the course root)",
    )


def add_grade(commands) -> None:
    grade = commands.add_parser(
        "grade",
        help="grade one submission (folder or .zip), or many in parallel (--out)",
        description="Grade a submission: each case runs in a child process, the parent verifies "
        "the run and compares it with golden. Exit 0 whatever the score; non-zero only when "
        "grading itself could not run.",
    )
    add_unit(grade)
    grade.add_argument(
        "submission",
        nargs="+",
        help="a folder or .zip holding the editable files; several: batch grading (needs --out)",
    )
    grade.add_argument("--out", metavar="DIR", help="batch: reports/<name>.json and scores.csv")
    grade.add_argument("--force", action="store_true", help="batch: regrade finished ones too")
    grade.add_argument("--json", metavar="REPORT", help="write the report as JSON here")
    grade.add_argument("--gradescope", metavar="RESULTS", help="write Gradescope results.json here")
    grade.add_argument("--case", action="append", help="grade only this case (repeatable)")
    grade.add_argument("--timeout", type=float, help="wall seconds per case (default: unit.yaml)")
    grade.add_argument(
        "--all-cases",
        action="store_true",
        help="run every case even after a policy timed out (default: its other cases get the "
        "same verdict without running)",
    )
    grade.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="several submissions: how many are graded at once (default: the number of "
        "cores plus one); one submission runs its cases one after another",
    )
    grade.add_argument(
        "--staff",
        action="store_true",
        help="show hidden-case details (never give this to students)",
    )
    _add_variant_options(grade)
    grade.set_defaults(handler=_grade)
