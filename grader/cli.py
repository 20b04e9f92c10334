"""``infralab``: the staff command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import nbgrader_course, reference, starter
from .grading import GradingError
from .tracegen import SpecError
from .units import REPO_ROOT, UnitError, load_unit


def _simulate(args, extra: list[str]) -> int:
    unit = load_unit(args.unit)
    if not args.reference:
        print("infralab simulate: only --reference runs are supported here", file=sys.stderr)
        return 2
    policies = reference.solution_policies(unit)
    from servesim.cli import main as simulate_main

    return simulate_main(extra, policies_module=policies, lab_dir=unit.lab_dir)


def _run_gpu(args, extra: list[str]) -> int:
    unit = load_unit(args.unit)
    if not args.reference:
        print("infralab run-gpu: only --reference runs are supported here", file=sys.stderr)
        return 2
    policies = reference.solution_policies(unit)
    try:
        from realdevice.cli import main as run_gpu_main  # needs torch
    except ImportError as exc:
        print(f"infralab run-gpu: error: {exc}", file=sys.stderr)
        return 2
    return run_gpu_main(extra, policies_module=policies, lab_dir=unit.lab_dir)


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


def _site_build(args, extra: list[str]) -> int:
    from pathlib import Path

    from .sitebuild import BuildError
    from .sitebuild.build import DEFAULT_OUT, build_site
    from .units import LABS_DIR

    out = Path(args.out) if args.out else DEFAULT_OUT
    labs = Path(args.labs_dir) if args.labs_dir else LABS_DIR
    try:
        report = build_site(out, labs)
    except BuildError as exc:
        print(f"infralab site build: error: {exc}", file=sys.stderr)
        return 1
    for note in report.handout_notes:
        print(f"note: {note}")
    print(f"built {len(report.pages)} pages, {len(report.claims)} claims checked -> {report.out}")
    return 0


def _golden(args, extra: list[str]) -> int:
    from . import golden

    unit = load_unit(args.unit)
    reference.engine(unit)
    if args.check:
        bad = [s for s in golden.check_golden(unit) if s.state is not golden.GoldenState.OK]
        for status in bad:
            print(f"{status.state.value}: {_show_path(status.path)} ({status.reason})")
        if bad:
            print(f"run: infralab golden --unit {unit.id}", file=sys.stderr)
            return 1
        print("golden files are up to date")
        return 0
    changed = golden.write_golden(unit)
    for path in changed:
        verb = "wrote" if path.exists() else "removed"
        print(f"{verb} {_show_path(path)}")
    if not changed:
        print("golden files are up to date")
    return 0


def _grade(args, extra: list[str]) -> int:
    from .grading import grade_submission
    from .sandbox import Limits

    if len(args.submission) > 1 or args.out:
        from . import batch

        return batch.run_cli(args)
    args.submission = args.submission[0]

    outputs = [Path(p) for p in (args.json, args.gradescope) if p]
    for path in outputs:
        if path.is_dir():
            raise UnitError(f"{path}: is a folder, expected a file path")
    limits = Limits(wall_s=args.timeout) if args.timeout else None
    try:
        report = grade_submission(
            args.unit, Path(args.submission), cases=args.case or None, limits=limits, jobs=args.jobs
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


def _release(args, extra: list[str]) -> int:
    from . import release

    unit = load_unit(args.unit)
    out = Path(args.out) if args.out else REPO_ROOT / "dist" / unit.id
    if out.exists() and not out.is_dir():
        raise UnitError(f"--out {out}: exists and is not a folder")
    if args.action == "student":
        dest = release.build_student_zip(unit, out / f"infra-lab-{unit.id}.zip")
    else:
        reference.engine(unit)
        from . import golden

        stale = [s for s in golden.check_golden(unit) if s.state is not golden.GoldenState.OK]
        if stale:
            raise UnitError(
                f"golden files are not up to date ({stale[0].path.name}: {stale[0].reason}); "
                f"run: infralab golden --unit {unit.id}"
            )
        dest = release.build_autograder_zip(unit, out / "autograder.zip")
    print(f"wrote {_show_path(dest)}")
    return 0


def _trace_new(args, extra: list[str]) -> int:
    from . import tracetools

    unit = load_unit(args.unit)
    dest = tracetools.new_trace(unit, Path(args.spec), args.output, args.data)
    print(f"wrote {_show_path(dest)}")
    return 0


def _trace_import(args, extra: list[str]) -> int:
    from . import tracetools

    unit = load_unit(args.unit)
    dest, doc = tracetools.import_trace(
        unit,
        Path(args.azure),
        args.output,
        args.spec_out,
        start=args.start,
        duration=args.duration,
        scale=args.scale,
        time_scale=args.time_scale,
        max_requests=args.max_requests,
        name=args.name,
    )
    print(f"wrote {_show_path(dest)} ({len(doc['requests'])} requests)")
    if args.spec_out:
        print(f"wrote {_show_path(Path(args.spec_out))}")
    return 0


def _trace_check(args, extra: list[str]) -> int:
    from . import tracetools

    if not args.paths and not args.unit:
        raise UnitError("give trace files to check, or --unit to check all of a unit's traces")
    unit = load_unit(args.unit or "unit07")
    if args.paths:
        lines = [tracetools.check_file(unit, Path(p), args.data) for p in args.paths]
    else:
        lines = tracetools.check_unit_traces(unit, args.data)
    for line in lines:
        print(f"{'ok' if line.ok else 'error'}: {_show_path(line.path)}: {line.message}")
    bad = sum(1 for line in lines if not line.ok)
    if bad:
        print(f"{bad} problem(s)", file=sys.stderr)
    return 1 if bad else 0


def _trace_mutants(args, extra: list[str]) -> int:
    from . import mutants

    unit = load_unit(args.unit)
    selected = mutants.list_mutants(unit)
    if args.mutant:
        known = {m.name: m for m in selected}
        missing = [name for name in args.mutant if name not in known]
        if missing:
            raise UnitError(f"unknown mutant(s) {', '.join(missing)} (known: {', '.join(known)})")
        selected = [known[name] for name in args.mutant]
    if not selected:
        raise UnitError(f"no mutants for {unit.id} in {mutants.MUTANTS_DIR / unit.id}")
    try:
        results = mutants.kill_matrix(unit, selected)
    except GradingError as exc:
        raise UnitError(str(exc)) from None
    print(mutants.render_matrix(results))
    survivors = [r.mutant.name for r in results if not r.killed_by_hidden]
    for name in survivors:
        print(f"warning: mutant {name} survives every hidden case", file=sys.stderr)
    return 1 if survivors and args.strict else 0


def _show_path(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


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

    run_gpu = commands.add_parser(
        "run-gpu",
        help="run the lab's run_gpu.py (real device, PyTorch) with the reference policies",
        description="Run the lab's run_gpu.py with the reference solution. Flags after the "
        "known ones go to run_gpu.py (e.g. --trace mixed --mode live, or --calibrate --output "
        "profile.json).",
    )
    run_gpu.add_argument("--unit", required=True)
    run_gpu.add_argument("--reference", action="store_true", help="use the reference solution")
    run_gpu.set_defaults(handler=_run_gpu, passthrough=True)

    starter_cmd = commands.add_parser("starter", help="starter (lab folder) files")
    starter_sub = starter_cmd.add_subparsers(dest="action", required=True)
    sync = starter_sub.add_parser("sync", help="regenerate starter files from the solutions")
    sync.add_argument("--unit", required=True)
    sync.add_argument("--check", action="store_true", help="report stale files, write nothing")
    sync.set_defaults(handler=_starter_sync)

    site_cmd = commands.add_parser("site", help="the static lesson site")
    site_sub = site_cmd.add_subparsers(dest="action", required=True)
    site_build = site_sub.add_parser(
        "build",
        help="render the site (runs the reference simulations at build time)",
        description="Render site/templates and labs/<unit>/*.j2 into a static site. Every "
        "simulator number comes from runs made now; a claim of the text that stops holding "
        "fails the build.",
    )
    site_build.add_argument("--out", help="output folder (default: site/build)")
    site_build.add_argument(
        "--labs-dir", help="folder of <unit>/unit.yaml to build from (default: labs/)"
    )
    site_build.set_defaults(handler=_site_build)
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

    release_cmd = commands.add_parser(
        "release", help="build release artefacts: student zip, Gradescope bundle, nbgrader course"
    )
    release_sub = release_cmd.add_subparsers(dest="action", required=True)
    for kind, text in (
        (
            "student",
            "the lab folder as students get it (infra-lab/...), with no hidden traces, golden "
            "files, solutions or grader code",
        ),
        (
            "autograder",
            "Gradescope's autograder.zip (setup.sh, run_autograder, grader, lab folder, hidden "
            "traces, golden)",
        ),
    ):
        release_kind = release_sub.add_parser(kind, help=text, description=text)
        release_kind.add_argument("--unit", required=True)
        release_kind.add_argument(
            "--out", metavar="DIR", help="output folder (default: dist/<unit>)"
        )
        release_kind.set_defaults(handler=_release)
    nbgrader_course.add_parser(release_sub)

    grade = commands.add_parser(
        "grade",
        help="grade one submission (folder or .zip), or many in parallel (--out)",
        description="Grade a submission: each case runs in a child process, the parent verifies "
        "the run and compares it with golden. Exit 0 whatever the score; non-zero only when "
        "grading itself could not run.",
    )
    grade.add_argument("--unit", required=True)
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
        "--jobs",
        type=int,
        metavar="N",
        help="one submission: cases judged at once (default: up to 2); "
        "several: submissions graded at once (default: the number of cores)",
    )
    grade.add_argument(
        "--staff",
        action="store_true",
        help="show hidden-case details (never give this to students)",
    )
    grade.set_defaults(handler=_grade)

    trace = commands.add_parser("trace", help="make, import and check traces; mutant report")
    trace_sub = trace.add_subparsers(dest="action", required=True)
    new = trace_sub.add_parser(
        "new",
        help="write a trace from a YAML spec (explicit list, seeded generator or Azure import)",
    )
    new.add_argument("--unit", required=True)
    new.add_argument("--spec", required=True, help="the YAML spec")
    new.add_argument(
        "--output", help="trace file to write (default traces/<unit>/hidden/<name>.json)"
    )
    new.add_argument("--data", help="folder holding the Azure CSV files of import specs")
    new.set_defaults(handler=_trace_new)

    imp = trace_sub.add_parser("import", help="turn a window of the Azure LLM trace into a trace")
    imp.add_argument("--unit", required=True)
    imp.add_argument("--azure", required=True, metavar="CSV", help="an Azure LLM inference CSV")
    imp.add_argument("--start", type=float, default=0.0, help="window start, seconds after row 1")
    imp.add_argument("--duration", type=float, required=True, help="window length in seconds")
    imp.add_argument("--scale", type=float, required=True, help="divide token counts by this")
    imp.add_argument("--time-scale", type=float, help="divide times by this (default: --scale)")
    imp.add_argument("--max-requests", type=int, help="keep at most this many requests")
    imp.add_argument("--name", help="trace name (default azure-<service>-<start>s)")
    imp.add_argument(
        "--output", help="trace file to write (default traces/<unit>/hidden/<name>.json)"
    )
    imp.add_argument("--spec-out", help="also write the YAML spec that remakes this trace")
    imp.set_defaults(handler=_trace_import)

    check = trace_sub.add_parser(
        "check", help="validate traces (JSON or YAML) with the lab's own errors"
    )
    check.add_argument("paths", nargs="*", help="trace files (default: every trace of --unit)")
    check.add_argument("--unit", help="check the unit's public and hidden traces and specs")
    check.add_argument("--data", help="folder holding the Azure CSV files of import specs")
    check.set_defaults(handler=_trace_check)

    mut = trace_sub.add_parser("mutants", help="which graded cases kill which mutant policy")
    mut.add_argument("--unit", required=True)
    mut.add_argument("--mutant", action="append", help="only this mutant (repeatable)")
    mut.add_argument(
        "--strict", action="store_true", help="exit 1 when a mutant survives the hidden set"
    )
    mut.set_defaults(handler=_trace_mutants)

    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.handler(args, extra)
    except Exception as exc:
        if not isinstance(exc, _user_errors()):
            raise
        print(f"infralab: error: {exc}", file=sys.stderr)
        return 2


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean bad input (one line, exit 2) rather than a bug in infralab."""
    errors = [UnitError, GradingError, SpecError, OSError]
    servesim = sys.modules.get("servesim")
    if servesim is not None:
        errors.append(servesim.TraceError)
    return tuple(errors)


if __name__ == "__main__":
    sys.exit(main())
