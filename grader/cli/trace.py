"""``infralab trace new|import|check|mutants``: make, import and check traces; mutant report."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..units import UnitError, load_unit
from .common import add_unit, show_path, with_extra

_OUTPUT_HELP = "trace file to write (default traces/<unit>/hidden/<name>.json)"
_DATA_HELP = "folder holding the Azure CSV files of import specs"


def _trace_new(args, extra: list[str]) -> int:
    tracetools = with_extra("grader.traces.tracetools", "traces")

    unit = load_unit(args.unit)
    dest = tracetools.new_trace(unit, Path(args.spec), args.output, args.data)
    print(f"wrote {show_path(dest)}")
    return 0


def _trace_import(args, extra: list[str]) -> int:
    tracetools = with_extra("grader.traces.tracetools", "traces")

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
    print(f"wrote {show_path(dest)} ({len(doc['requests'])} requests)")
    if args.spec_out:
        print(f"wrote {show_path(Path(args.spec_out))}")
    return 0


def _trace_check(args, extra: list[str]) -> int:
    tracetools = with_extra("grader.traces.tracetools", "traces")

    if not args.paths and not args.unit:
        raise UnitError("give trace files to check, or --unit to check all of a unit's traces")
    unit = load_unit(args.unit) if args.unit else None  # files alone need only the engine
    if args.paths:
        lines = [tracetools.check_file(unit, Path(p), args.data) for p in args.paths]
    else:
        lines = tracetools.check_unit_traces(unit, args.data)
    for line in lines:
        print(f"{'ok' if line.ok else 'error'}: {show_path(line.path)}: {line.message}")
    bad = sum(1 for line in lines if not line.ok)
    if bad:
        print(f"{bad} problem(s)", file=sys.stderr)
    return 1 if bad else 0


def _mutant_bar(total: int):
    """A progress bar on stderr when it is a terminal (nothing in a log or a pipe)."""
    from tqdm import tqdm

    class Bar(tqdm):
        monitor_interval = 0  # no monitor thread: the workers are forked while it is shown

    return Bar(
        total=total, unit="mutant", desc="grading", disable=not sys.stderr.isatty(), file=sys.stderr
    )


def _trace_mutants(args, extra: list[str]) -> int:
    from ..grading.errors import GradingError
    from ..traces import mutants

    unit = load_unit(args.unit)
    selected = mutants.list_mutants(unit)
    if args.mutant:
        known = {m.name: m for m in selected}
        missing = [name for name in args.mutant if name not in known]
        if missing:
            raise UnitError(f"unknown mutant(s) {', '.join(missing)} (known: {', '.join(known)})")
        selected = [known[name] for name in args.mutant]
    if not selected:
        raise UnitError(f"no mutants for {unit.id} in {show_path(unit.mutants_dir)}")
    if args.jobs is not None and args.jobs < 1:
        raise UnitError(f"--jobs {args.jobs}: must be at least 1")
    jobs = args.jobs or os.cpu_count() or 1
    started = time.monotonic()
    bar = _mutant_bar(len(selected))
    try:
        results = mutants.kill_matrix(unit, selected, jobs=jobs, on_done=lambda m: bar.update(1))
    except GradingError as exc:
        raise UnitError(str(exc)) from None
    finally:
        bar.close()
    print(mutants.render_matrix(results))
    seconds = time.monotonic() - started
    print(f"{len(results)} mutants graded in {seconds:.1f} s ({min(jobs, len(results))} at once)")
    survivors = [r.mutant.name for r in results if not r.killed_by_hidden]
    for name in survivors:
        print(f"warning: mutant {name} survives every hidden case", file=sys.stderr)
    if args.write_hints:
        from ..variants import strict

        print(f"wrote {show_path(strict.write_hints(unit, results))}")
    if args.variants:
        from ..variants.sample import check_sample

        survivors += check_sample(unit, selected, results, args.variants)
    return 1 if survivors and args.strict else 0


def add_trace(commands) -> None:
    trace = commands.add_parser("trace", help="make, import and check traces; mutant report")
    trace_sub = trace.add_subparsers(dest="action", required=True)
    new = trace_sub.add_parser(
        "new",
        help="write a trace from a YAML spec (explicit list, seeded generator or Azure import)",
    )
    add_unit(new)
    new.add_argument("--spec", required=True, help="the YAML spec")
    new.add_argument("--output", help=_OUTPUT_HELP)
    new.add_argument("--data", help=_DATA_HELP)
    new.set_defaults(handler=_trace_new)

    imp = trace_sub.add_parser("import", help="turn a window of the Azure LLM trace into a trace")
    add_unit(imp)
    imp.add_argument("--azure", required=True, metavar="CSV", help="an Azure LLM inference CSV")
    imp.add_argument("--start", type=float, default=0.0, help="window start, seconds after row 1")
    imp.add_argument("--duration", type=float, required=True, help="window length in seconds")
    imp.add_argument("--scale", type=float, required=True, help="divide token counts by this")
    imp.add_argument("--time-scale", type=float, help="divide times by this (default: --scale)")
    imp.add_argument("--max-requests", type=int, help="keep at most this many requests")
    imp.add_argument("--name", help="trace name (default azure-<service>-<start>s)")
    imp.add_argument("--output", help=_OUTPUT_HELP)
    imp.add_argument("--spec-out", help="also write the YAML spec that remakes this trace")
    imp.set_defaults(handler=_trace_import)

    check = trace_sub.add_parser(
        "check", help="validate traces (JSON or YAML) with the lab's own errors"
    )
    check.add_argument("paths", nargs="*", help="trace files (default: every trace of --unit)")
    check.add_argument("--unit", help="check the unit's public and hidden traces and specs")
    check.add_argument("--data", help=_DATA_HELP)
    check.set_defaults(handler=_trace_check)

    mut = trace_sub.add_parser("mutants", help="which graded cases kill which mutant policy")
    add_unit(mut)
    mut.add_argument("--mutant", action="append", help="only this mutant (repeatable)")
    mut.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="how many mutants are graded at once (default: the number of cores)",
    )
    mut.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a mutant survives the hidden set (of the fixed set or of a variant)",
    )
    mut.add_argument(
        "--variants",
        type=int,
        default=0,
        metavar="N",
        help="also check N sample variants (unit.yaml 'variants'): every mutant must lose "
        "points on a hidden case of each",
    )
    mut.add_argument(
        "--write-hints",
        action="store_true",
        help="write traces/<unit>/mutant-killers.json (which hidden cases killed each mutant), "
        "which makes the variant checks fast",
    )
    mut.set_defaults(handler=_trace_mutants)
