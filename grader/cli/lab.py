"""``infralab simulate``, ``run-gpu``, ``starter sync`` and ``lab open``: the lab folder."""

from __future__ import annotations

import sys
from collections.abc import Callable

from .. import reference
from ..collector import collector_off
from ..units import load_unit
from .common import add_unit, show_path


def _run_script(command: str, load_main: Callable, args, extra: list[str]) -> int:
    """Run a lab script's ``main(argv, policies_module, lab_dir)`` with the reference policies.

    ``load_main`` imports the script's ``main``; an ImportError (e.g. no torch) is one error line.
    ``--help`` prints the wrapper's flags and then, with ``--unit``, the script's own.
    """
    if args.help:
        print(args.wrapper_help())
        if args.unit is None:
            print(f"\nadd --unit UNIT to see the flags {command} passes to the lab's script")
            return 0
        extra = ["--help"]
    elif args.unit is None:
        print(
            f"infralab {command}: error: the following arguments are required: --unit",
            file=sys.stderr,
        )
        return 2
    unit = load_unit(args.unit)
    if not args.reference and not args.help:
        print(f"infralab {command}: only --reference runs are supported here", file=sys.stderr)
        return 2
    policies = reference.solution_policies(unit)
    try:
        script_main = load_main()
    except ImportError as exc:
        print(f"infralab {command}: error: {exc}", file=sys.stderr)
        return 2
    engine = getattr(args, "engine", None)
    if engine is None or args.help:
        return _help_exit(script_main, extra, policies, unit)
    run_one, encode, read_trace = fast_runner(unit, engine)
    with collector_off():  # simulate (the command with --engine) makes no reference cycles
        return script_main(
            extra,
            policies_module=policies,
            lab_dir=unit.lab_dir,
            run_one=run_one,
            encode=encode,
            read_trace=read_trace,
        )


def fast_runner(unit, engine: str):
    """``simulate.py``'s ``run_one``, ``encode`` and ``read_trace`` hooks for ``--engine``: the
    fast path where it applies, the run file's text, and the trace read into columns
    (``fastpath.tracecolumns``; None with the lab engine or without numpy).

    ``auto`` uses the fast path when it covers the run and numpy is installed (the ``traces``
    extra), the lab engine otherwise; ``fast`` insists (one error line when it cannot run);
    ``lab`` never uses it. The fast path makes compact entries; those asked for in the full
    format are expanded while the file is written (``fastpath.fullwrite``), one request and
    one event at a time, so the expanded run never exists as objects.
    """
    from servesim.cli import UsageError

    from ..jsonio import run_file_chunks

    to_expand: set[int] = set()  # id() of the compact entries to write in the full format

    def encode(document: dict, indent: int | None = 2):
        expand = any(id(run) in to_expand for run in document["runs"])
        if columns_read and (expand or indent is not None):
            from ..fastpath import tracecolumns

            document = tracecolumns.listed(document)  # writers of lists only
        if not expand:
            return run_file_chunks(document, indent)
        from ..fastpath import fullwrite

        return fullwrite.chunks(document)

    def run_one(spec, params, trace, device, fmt, extended):
        run = _fast_run(spec, params, trace, device, extended)
        if run is not None and fmt != "compact":
            to_expand.add(id(run))
        return run

    def _fast_run(spec, params, trace, device, extended):
        if engine == "lab":
            return None
        try:
            from .. import fastpath
        except ImportError as exc:  # numpy is not in the core install
            if engine == "fast":
                raise UsageError(
                    f"--engine fast needs numpy ({exc}); run `bash scripts/setup.sh traces`"
                ) from None
            return None

        run = fastpath.reference_run(unit, spec.name, params, trace, device, "compact", extended)
        if run is None and engine == "fast":
            raise UsageError(
                f"--engine fast does not cover policy {spec.name} of {unit.id} on this trace "
                "and device (see grader/fastpath); use --engine lab or auto"
            )
        return run

    columns_read = False

    def read_trace(path):
        nonlocal columns_read
        try:
            from ..fastpath import tracecolumns
        except ImportError:  # numpy is not in the core install
            from servesim.trace import read_trace_file

            return read_trace_file(path)
        columns_read = True
        return tracecolumns.read_trace(path)

    return run_one, encode, None if engine == "lab" else read_trace


def _simulate_main():
    from servesim.cli import main

    return main


def _run_gpu_main():
    from realdevice.cli import main  # needs torch

    return main


def _help_exit(script_main: Callable, argv: list[str], policies, unit) -> int:
    """``script_main(argv)``; argparse's exit (``--help``, a usage error) becomes the code."""
    try:
        return script_main(argv, policies_module=policies, lab_dir=unit.lab_dir)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2


def _add_script(commands, name: str, load_main: Callable, help_text: str, description: str):
    """A subcommand that runs a lab script; its own ``--help`` also shows the script's flags,
    so it has no argparse help action and ``--unit`` is checked by the handler."""
    parser = commands.add_parser(name, help=help_text, description=description, add_help=False)
    parser.add_argument(
        "-h",
        "--help",
        action="store_true",
        help="show this help (and, with --unit, the lab script's flags) and exit",
    )
    parser.add_argument("--unit", help="the unit (required)")
    parser.add_argument("--reference", action="store_true", help="use the reference solution")
    parser.set_defaults(
        handler=lambda args, extra: _run_script(name, load_main, args, extra),
        passthrough=True,
        wrapper_help=parser.format_help,
    )
    return parser


def add_simulate(commands) -> None:
    parser = _add_script(
        commands,
        "simulate",
        _simulate_main,
        "run the lab simulator with the reference policies",
        "Run the lab's simulate.py with the reference solution. Flags after the known ones go "
        "to simulate.py (e.g. --trace mixed --policy both --chunk 2 --format compact).",
    )
    parser.add_argument(
        "--engine",
        choices=("auto", "lab", "fast"),
        default="auto",
        help="auto (default): the staff fast path when it covers the policy and device, the "
        "lab engine otherwise; lab or fast force one",
    )


def add_run_gpu(commands) -> None:
    _add_script(
        commands,
        "run-gpu",
        _run_gpu_main,
        "run the lab's run_gpu.py (real device, PyTorch) with the reference policies",
        "Run the lab's run_gpu.py with the reference solution. Flags after the known ones go "
        "to run_gpu.py (e.g. --trace mixed --mode live, or --calibrate --output profile.json).",
    )


def _starter_sync(args, extra: list[str]) -> int:
    from ..course import starter

    unit = load_unit(args.unit)
    if args.check:
        stale = starter.stale_files(unit)
        for path in stale:
            print(f"stale: {show_path(path)}")
        if stale:
            print(f"run: infralab starter sync --unit {unit.id}", file=sys.stderr)
        return 1 if stale else 0
    written = starter.sync(unit)
    for path in written:
        print(f"wrote {show_path(path)}")
    if not written:
        print("starter files are up to date")
    return 0


def add_starter(commands) -> None:
    starter_cmd = commands.add_parser("starter", help="starter (lab folder) files")
    starter_sub = starter_cmd.add_subparsers(dest="action", required=True)
    sync = starter_sub.add_parser("sync", help="regenerate starter files from the solutions")
    add_unit(sync)
    sync.add_argument("--check", action="store_true", help="report stale files, write nothing")
    sync.set_defaults(handler=_starter_sync)


def _lab_open(args, extra: list[str]) -> int:
    from ..labfolder import assemble

    unit = load_unit(args.unit)
    folder = assemble(unit, args.dir)
    print(f"{unit.id} lab folder: {folder}")
    print(f"next: cd {folder} && python3 run_tests.py   (read README.md first)")
    return 0


def add_lab(commands) -> None:
    lab_cmd = commands.add_parser("lab", help="a unit's lab folder")
    lab_sub = lab_cmd.add_subparsers(dest="action", required=True)
    open_cmd = lab_sub.add_parser(
        "open",
        help="write a unit's lab folder (its files and the engine) to a new folder",
        description="Write the unit's lab folder, as the student zip holds it, to DIR (a new "
        "or empty folder). It runs with python3 alone.",
    )
    add_unit(open_cmd)
    open_cmd.add_argument("dir", metavar="DIR", help="the new lab folder")
    open_cmd.set_defaults(handler=_lab_open)
