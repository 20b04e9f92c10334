"""``simulate.py``: run the policies over a trace, print the comparison, write the run file."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import contract
from .compact import compact_run, expand_run, is_compact, request_count
from .device import DeviceProfile
from .engine import PolicyError, simulate
from .faults import FAULTS
from .labconfig import LabConfig, load_lab
from .runfile import build_document, build_run, default_format, dumps, write_atomic
from .stubs import EXIT_NOT_IMPLEMENTED, unfinished
from .table import MAX_REQUEST_ROWS, render
from .trace import TraceError, read_trace_file, resolve_trace
from .usage import UsageError, non_negative

if TYPE_CHECKING:
    from .labflags import Setup

EXIT_BAD_INPUT = 2
EXIT_POLICY = EXIT_NOT_IMPLEMENTED  # a policy broke a rule or is still a stub


def _extended():
    """Unit 08's flags (``servesim.labflags``: protocols, loads, tiers), imported only by labs
    whose runs are extended, so unit 07's command line (and each graded case) never loads
    them."""
    from . import labflags

    return labflags


def _int_at_least(minimum: int):
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
    every = _every(lab)
    parser.add_argument("--policy", choices=[*names, every], default=every)
    seen = set()
    for spec in lab.policies:
        for param, meta in spec.params.items():
            if param in seen:  # several policies share a parameter (unit 08's budget)
                continue
            seen.add(param)
            parser.add_argument(
                f"--{param.replace('_', '-')}",
                dest=param,
                type=_int_at_least(meta.get("min", 1)),
                default=meta["default"],
                help=f"{meta.get('help', param)} (policy {spec.name}; default {meta['default']})",
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
        _extended().add_flags(parser)
    return parser


_PARSER: list = []  # [(lab, prog, parser)]: the last one built in this process


def parser_for(lab: LabConfig, prog: str = "simulate.py") -> argparse.ArgumentParser:
    """``build_parser(lab, prog)``, built once per process for an equal lab. The grader's case
    runner builds it before it forks a process per case, so no case pays for it again."""
    if _PARSER and _PARSER[0][0] == lab and _PARSER[0][1] == prog:
        return _PARSER[0][2]
    parser = build_parser(lab, prog)
    _PARSER[:] = [(lab, prog, parser)]
    return parser


def _every(lab: LabConfig) -> str:
    """The --policy value that selects every policy: unit 07 has two ("both"), later units more."""
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


def _named(function, lab: LabConfig | None = None, check=None):
    """``function`` with a stub's ``NotImplementedError`` turned into a ``PolicyError`` that
    names the unfinished function (``servesim.stubs``); ``check(answer)`` (``servesim.contract``)
    turns an answer that breaks its contract into a ``PolicyError`` naming the function."""

    def call(*args, **kwargs):
        guarded = contract.GUARD.who is None  # the engine guards a policy's view itself
        if guarded:
            contract.GUARD.start(f"{function.__name__}()")
        broken = None
        try:
            answer = function(*args, **kwargs)
        except NotImplementedError as exc:
            raise PolicyError(unfinished(exc, lab)) from None
        finally:
            if guarded:
                broken = contract.GUARD.stop()
        if broken is not None:
            raise PolicyError(broken)
        if check is not None and (problem := check(answer)) is not None:
            raise PolicyError(contract.sentence(f"{function.__name__}()", problem))
        return answer

    return call


def selected_policies(lab: LabConfig, policies_module, selected: str, args, overrides=None):
    """``(spec, params, policy)`` for each selected policy, in the lab's order.

    ``policy(view)`` calls the student's function with its parameters (``overrides`` first,
    e.g. a tier's budget); a stub that still raises ``NotImplementedError`` becomes a
    ``PolicyError`` that names the function.
    """
    overrides = overrides or {}
    for spec in lab.policies:
        if selected not in (spec.name, _every(lab)):
            continue
        params = {name: overrides.get(name, getattr(args, name)) for name in spec.params}
        function = _named(getattr(policies_module, spec.function), lab)

        def policy(view, function=function, params=params):
            return function(view, **params)

        yield spec, params, policy


def admit_hook(spec, policies_module, lab: LabConfig | None = None):
    """The policy's admission function (unit.yaml ``admit:``), or None."""
    if not spec.admit:
        return None
    return _named(getattr(policies_module, spec.admit), lab, contract.admit_problem)


def run_policies(
    lab: LabConfig, policies_module, trace, device, selected, args, fault, run_one=None
):
    """Simulate each selected policy; return the run entries in the lab's policy order.

    ``run_one(spec, params, trace, device, fmt, extended)`` (optional, staff tools) may return
    the run entry made another way, or None to use the lab engine.
    """
    chosen = list(selected_policies(lab, policies_module, selected, args))
    fmt = args.format or default_format(trace, len(chosen))
    runs = []
    for spec, params, policy in chosen:
        run = run_one(spec, params, trace, device, fmt, False) if run_one and not fault else None
        if run is None:
            timeline = simulate(trace, policy, device, name=spec.function)
            run = in_format(build_run(spec.name, params, device, timeline, fault), timeline, fmt)
        runs.append(run)
    return runs


def in_format(run: dict, timeline, fmt: str) -> dict:
    """``run`` (full, made from ``timeline``) in ``fmt``; full when compact cannot hold it."""
    if fmt != "compact" or run["fault"] is not None:
        return run
    compact = compact_run(run, timeline)
    if compact is None:
        print(f"note: {run['policy']}: batches that leave running requests out are written in full")
    return compact or run


def run_extended(lab: LabConfig, policies_module, setup: Setup, args, run_one=None):
    """Unit 08: each selected policy under the setup's limits; (realised trace, run entries).

    ``run_one`` as in ``run_policies``; it is asked only for open-loop runs without a queue
    cap or an admission hook.
    """
    selected = setup.policy or args.policy
    overrides = {} if setup.budget is None else {"budget": setup.budget}
    runs, trace = [], setup.trace
    chosen = list(selected_policies(lab, policies_module, selected, args, overrides))
    plain = setup.closed is None and setup.queue_cap is None and args.fault is None
    for spec, params, policy in chosen:
        if run_one and plain and not spec.admit:
            fmt = args.format or default_format(trace, len(chosen))
            run = run_one(spec, params, setup.trace, setup.device, fmt, True)
            if run is not None:
                runs.append(run)
                continue
        limits = {"budget": setup.budget if "budget" in spec.params else None}
        limits["queueCap"] = setup.queue_cap
        try:
            timeline = simulate(
                setup.trace,
                policy,
                setup.device,
                budget=limits["budget"],
                queue_cap=limits["queueCap"],
                admit=admit_hook(spec, policies_module, lab),
                closed=setup.closed,
                name=spec.function,
            )
        except PolicyError as exc:  # with --policy all, say which policy broke a rule
            raise PolicyError(f"policy {spec.name}: {exc}") from None
        trace = timeline.trace
        run = build_run(
            spec.name, params, setup.device, timeline, args.fault, extended=True, limits=limits
        )
        runs.append(in_format(run, timeline, args.format or default_format(trace, len(chosen))))
    return trace, runs


def _uses_budget(lab: LabConfig):
    return lambda name: "budget" in lab.policy(name).params


def print_faults() -> None:
    for fault in FAULTS.values():
        print(f"{fault.name:26} {fault.summary}")


def import_policies(lab: LabConfig):
    """The lab folder's own ``policies.py`` (the student's file)."""
    sys.path.insert(0, str(lab.folder))
    return importlib.import_module("policies")


def protocol_lines(setup: Setup, runs: list[dict], report=None) -> list[str]:
    """Each run's measurement window under ``setup.protocol``, and what ``report(setup, run)``
    (the lab's own measurements, optional) says about it."""
    from .protocol import WindowError

    protocol, lines = setup.protocol, []
    for run in runs:
        requests = expand_run(run)["requests"]
        try:
            window = protocol.window(requests)
        except WindowError as exc:
            lines.append(
                f"protocol {protocol.name}, {run['policy']}: no measurement window ({exc})"
            )
            continue
        inside = len(window.select(requests))
        lines.append(
            f"protocol {protocol.name}, seed {setup.seed}, {run['policy']}: window "
            f"[{window.start_ms:.3f}, {window.end_ms:.3f}) ms by arrival holds {inside} of "
            f"{len(requests)} requests (warm-up {protocol.warmup_requests}, cool-down "
            f"{protocol.cooldown_requests})"
        )
        if report is not None:
            lines += report(setup, {**run, "requests": requests})
    return lines


def main(
    argv=None,
    policies_module=None,
    lab_dir: Path | None = None,
    run_one=None,
    encode=None,
    report=None,
) -> int:
    """``simulate.py``. Staff tools pass ``run_one`` (see ``run_policies``) and ``encode``, the
    run file's text as ``runfile.dumps`` makes it (a faster encoder of the same JSON); a lab
    passes ``report(setup, run) -> lines``, its own summary of each run under a protocol."""
    lab = load_lab(lab_dir) if lab_dir else load_lab()
    parser = parser_for(lab)
    args = parser.parse_args(argv)
    if args.list_faults:
        print_faults()
        return 0
    try:
        protocol = _extended().read_protocol(args) if lab.extended_runs else None
    except UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.trace and protocol is None:
        parser.error("--trace is required")
    try:
        trace = read_trace_file(resolve_trace(args.trace or protocol.sizes, lab.traces_dir))
        device = device_from_args(lab, args)
    except (TraceError, UsageError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    setup = None
    if lab.extended_runs:
        try:
            names, uses_budget = [p.name for p in lab.policies], _uses_budget(lab)
            setup = _extended().resolve(args, trace, device, names, uses_budget, protocol)
        except UsageError as exc:
            print(f"{parser.prog}: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if policies_module is None:
        policies_module = import_policies(lab)
    try:
        if setup is None:
            runs = run_policies(
                lab, policies_module, trace, device, args.policy, args, args.fault, run_one
            )
        else:
            trace, runs = run_extended(lab, policies_module, setup, args, run_one)
    except PolicyError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_POLICY
    except UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    document = build_document(trace, runs)
    small = request_count(runs[0]) <= MAX_REQUEST_ROWS  # the table shows each request
    print(render(trace.name, [expand_run(run) for run in runs] if small else runs))
    if args.output:
        compact = any(is_compact(run) for run in runs)
        text = (encode or dumps)(document, indent=None if compact else 2)
        write_atomic(Path(args.output), text)
        print(f"wrote {args.output}")
    if setup is not None and setup.protocol is not None:
        print("\n".join(protocol_lines(setup, runs, report)))
    return 0
