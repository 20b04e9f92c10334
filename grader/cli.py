"""``infralab``: the staff command line."""

from __future__ import annotations

import argparse
import sys

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
