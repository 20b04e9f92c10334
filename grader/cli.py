"""``infralab``: the staff command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import reference, starter
from .units import REPO_ROOT, UnitError, load_unit


def _simulate(args, extra: list[str]) -> int:
    unit = load_unit(args.unit)
    if not args.reference:
        print("infralab simulate: only --reference runs are supported here", file=sys.stderr)
        return 2
    policies = reference.solution_policies(unit)
    from servesim.cli import main as simulate_main

    return simulate_main(extra, policies_module=policies, lab_dir=unit.lab_dir)


def _starter_sync(args, extra: list[str]) -> int:
    unit = load_unit(args.unit)
    reference.engine(unit)
    if args.check:
        stale = starter.stale_files(unit)
        for path in stale:
            print(f"stale: {path.relative_to(REPO_ROOT)}")
        if stale:
            print(f"run: infralab starter sync --unit {unit.id}", file=sys.stderr)
        return 1 if stale else 0
    written = starter.sync(unit)
    for path in written:
        print(f"wrote {path.relative_to(REPO_ROOT)}")
    if not written:
        print("starter files are up to date")
    return 0


def _golden(args, extra: list[str]) -> int:
    from . import golden

    unit = load_unit(args.unit)
    reference.engine(unit)
    if args.check:
        bad = [s for s in golden.check_golden(unit) if s.state is not golden.GoldenState.OK]
        for status in bad:
            print(f"{status.state.value}: {status.path.relative_to(REPO_ROOT)} ({status.reason})")
        if bad:
            print(f"run: infralab golden --unit {unit.id}", file=sys.stderr)
            return 1
        print("golden files are up to date")
        return 0
    changed = golden.write_golden(unit)
    for path in changed:
        verb = "wrote" if path.exists() else "removed"
        print(f"{verb} {path.relative_to(REPO_ROOT)}")
    if not changed:
        print("golden files are up to date")
    return 0


def _grade(args, extra: list[str]) -> int:
    from .grading import GradingError, grade_submission
    from .sandbox import Limits

    outputs = [Path(p) for p in (args.json, args.gradescope) if p]
    for path in outputs:
        if path.is_dir():
            raise UnitError(f"{path}: is a folder, expected a file path")
    limits = Limits(wall_s=args.timeout) if args.timeout else None
    try:
        report = grade_submission(
            args.unit, Path(args.submission), cases=args.case or None, limits=limits
        )
    except GradingError as exc:
        raise UnitError(str(exc)) from None
    print(report.text(staff=args.staff))
    from .jsonio import write_json

    if args.json:
        write_json(Path(args.json), report.to_json(staff=args.staff))
        print(f"wrote {args.json}")
    if args.gradescope:
        write_json(Path(args.gradescope), report.to_gradescope())
        print(f"wrote {args.gradescope}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infralab", description="infra-lab staff tools")
    commands = parser.add_subparsers(dest="command", required=True)

    simulate = commands.add_parser(
        "simulate",
        help="run the lab simulator with the reference policies",
        description="Run the lab's simulate.py with the reference solution. Flags after the "
        "known ones go to simulate.py (e.g. --trace mixed --policy both --chunk 2).",
    )
    simulate.add_argument("--unit", required=True)
    simulate.add_argument("--reference", action="store_true", help="use the reference solution")
    simulate.set_defaults(handler=_simulate, passthrough=True)

    starter_cmd = commands.add_parser("starter", help="starter (lab folder) files")
    starter_sub = starter_cmd.add_subparsers(dest="action", required=True)
    sync = starter_sub.add_parser("sync", help="regenerate starter files from the solutions")
    sync.add_argument("--unit", required=True)
    sync.add_argument("--check", action="store_true", help="report stale files, write nothing")
    sync.set_defaults(handler=_starter_sync)

    golden_cmd = commands.add_parser(
        "golden",
        help="regenerate the golden (reference) results of every graded case",
        description="Run the reference solution on every graded case of unit.yaml and write "
        "traces/<unit>/golden/<case>.json. With --check, only report missing or stale files.",
    )
    golden_cmd.add_argument("--unit", required=True)
    golden_cmd.add_argument(
        "--check", action="store_true", help="report stale files, write nothing"
    )
    golden_cmd.set_defaults(handler=_golden)

    grade = commands.add_parser(
        "grade",
        help="grade one submission (folder or .zip) on every graded case",
        description="Grade a submission: each case runs in a child process, the parent verifies "
        "the run and compares it with golden. Exit 0 whatever the score; non-zero only when "
        "grading itself could not run.",
    )
    grade.add_argument("--unit", required=True)
    grade.add_argument("submission", help="a folder or .zip holding the editable files")
    grade.add_argument("--json", metavar="REPORT", help="write the report as JSON here")
    grade.add_argument("--gradescope", metavar="RESULTS", help="write Gradescope results.json here")
    grade.add_argument("--case", action="append", help="grade only this case (repeatable)")
    grade.add_argument("--timeout", type=float, help="wall seconds per case (default: unit.yaml)")
    grade.add_argument(
        "--staff",
        action="store_true",
        help="show hidden-case details (never give this to students)",
    )
    grade.set_defaults(handler=_grade)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.handler(args, extra)
    except UnitError as exc:
        print(f"infralab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
