"""``simulate.py``'s command line: its flags (one per policy parameter, from the lab's
configuration) and the device they select."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from .device import DeviceProfile
from .faults import FAULTS
from .labconfig import LabConfig
from .usage import UsageError, non_negative


def extended_flags():
    """The extended run's flags (``servesim.runflags``: protocols, loads, tiers), imported only
    by labs whose runs are extended, so a plain lab's command line (and each graded case) never
    loads them."""
    from . import runflags

    return runflags


def int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def build_parser(lab: LabConfig, prog: str = "simulate.py") -> argparse.ArgumentParser:
    names = [p.name for p in lab.policies]
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"{lab.title}: run scheduling policies on the virtual device.",
    )
    parser.add_argument(
        "--trace", help=f"trace name ({', '.join(lab.public_traces)}) or path to a JSON trace"
    )
    every = every_policy(lab)
    parser.add_argument("--policy", choices=[*names, every], default=every)
    seen = set()
    for spec in lab.policies:
        for param, meta in spec.params.items():
            if param in seen:  # several policies share a parameter (a budget)
                continue
            seen.add(param)
            parser.add_argument(
                f"--{param.replace('_', '-')}",
                dest=param,
                type=int_at_least(meta.get("min", 1)),
                default=meta["default"],
                help=f"{meta.get('help', param)} ({takers(lab, param)}; default {meta['default']})",
            )
    parser.add_argument(
        "--overhead-ms",
        type=non_negative,
        help=f"overhead per submission (default {lab.device.overhead_ms:g})",
    )
    parser.add_argument("--device-profile", help="JSON device profile replacing the defaults")
    parser.add_argument("--fault", choices=sorted(FAULTS), help="turn on a statistics bug")
    parser.add_argument("--list-faults", action="store_true", help="list the fault switches")
    parser.add_argument("--output", help="write the run file (JSON) here")
    parser.add_argument(
        "--format",
        choices=("full", "compact"),
        help="run file format: full (every token time and batch) or compact (step times and "
        "each request's slices); default: compact for large runs, full otherwise",
    )
    if lab.extended_runs:
        extended_flags().add_flags(parser)
    return parser


def takers(lab: LabConfig, param: str) -> str:
    """Which policies a parameter's flag is for, as its help says it: "every policy" when
    all of the lab's policies take it, else their names."""
    names = [spec.name for spec in lab.policies if param in spec.params]
    if len(names) == len(lab.policies) > 1:
        return "every policy"
    return f"{'policy' if len(names) == 1 else 'policies'} {', '.join(names)}"


_PARSER: list = []  # [(lab, prog, parser)]: the last one built in this process


def parser_for(lab: LabConfig, prog: str = "simulate.py") -> argparse.ArgumentParser:
    """``build_parser(lab, prog)``, built once per process for an equal lab. The grader's case
    runner builds it before it forks a process per case, so no case pays for it again."""
    if _PARSER and _PARSER[0][0] == lab and _PARSER[0][1] == prog:
        return _PARSER[0][2]
    parser = build_parser(lab, prog)
    _PARSER[:] = [(lab, prog, parser)]
    return parser


def every_policy(lab: LabConfig) -> str:
    """The --policy value that selects every policy ("both" for a lab with two)."""
    return "all" if lab.extended_runs else "both"


def device_from_args(lab: LabConfig, args) -> DeviceProfile:
    """The lab's device, replaced by ``--device-profile`` and adjusted by ``--overhead-ms``."""
    device = lab.device
    if args.device_profile:
        path = Path(args.device_profile)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"device profile {path}: cannot read it as JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise UsageError(f"device profile {path}: must be a JSON object")
        try:
            device = DeviceProfile.from_file(doc, source=str(path))
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
    if args.overhead_ms is not None:
        device = replace(device, overhead_ms=args.overhead_ms)
    return device
