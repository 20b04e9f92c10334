"""``simulate.py``: run the policies over a trace, print the comparison, write the run file.

Its flags are read in ``cliargs``; the policy functions are called through ``policycall``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .cliargs import device_from_args, extended_flags, parser_for
from .compact import compact_run, expand_run, is_compact, request_count
from .engine import PolicyError, simulate
from .faults import FAULTS
from .labconfig import LabConfig, load_lab
from .policycall import admit_hook, import_policies, selected_policies
from .runfile import (
    build_document,
    build_run,
    default_format,
    dumps,
    event_records,
    uses_lifecycle,
    write_atomic,
)
from .stubs import EXIT_NOT_IMPLEMENTED
from .table import MAX_REQUEST_ROWS, render
from .trace import TraceError, read_trace_file, resolve_trace
from .usage import UsageError

if TYPE_CHECKING:
    from .runflags import Setup

EXIT_BAD_INPUT = 2
EXIT_POLICY = EXIT_NOT_IMPLEMENTED  # a policy broke a rule or is still a stub


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
            events = fmt != "compact"  # a compact entry is made from the timeline
            run = build_run(spec.name, params, device, timeline, fault, events=events)
            run = in_format(run, timeline, fmt)
        runs.append(run)
    return runs


def in_format(run: dict, timeline, fmt: str) -> dict:
    """``run`` (full, made from ``timeline``, its ``events`` perhaps left to make: see
    ``build_run``) in ``fmt``; full when compact cannot hold it."""
    if fmt != "compact" or run["fault"] is not None:
        return _with_events(run, timeline)
    if uses_lifecycle(run):
        print(
            f"note: {run['policy']}: client cancels, shared prefixes and streamed output "
            "are written in full"
        )
        return _with_events(run, timeline)
    compact = compact_run(run, timeline)
    if compact is None:
        print(f"note: {run['policy']}: batches that leave running requests out are written in full")
    return compact or _with_events(run, timeline)


def _with_events(run: dict, timeline) -> dict:
    if run["events"] is None:
        swaps = run["device"].get("hostPages", 0) > 0  # as compact_run reads them
        run["events"] = event_records(timeline, extended="limits" in run, swaps=swaps)
    return run


def run_extended(lab: LabConfig, policies_module, setup: Setup, args, run_one=None):
    """Extended runs: each selected policy under the setup's limits; (realised trace, runs).

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
        fmt = args.format or default_format(trace, len(chosen))
        run = build_run(
            spec.name,
            params,
            setup.device,
            timeline,
            args.fault,
            extended=True,
            limits=limits,
            events=fmt != "compact",  # a compact entry is made from the timeline
        )
        runs.append(in_format(run, timeline, fmt))
    return trace, runs


def _uses_budget(lab: LabConfig):
    return lambda name: "budget" in lab.policy(name).params


def print_faults() -> None:
    for fault in FAULTS.values():
        print(f"{fault.name:26} {fault.summary}")


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
    read_trace=None,
) -> int:
    """``simulate.py``. Staff tools pass ``run_one`` (see ``run_policies``), ``encode``, the
    run file's text as ``runfile.dumps`` makes it (a faster encoder of the same JSON), and
    ``read_trace``, ``read_trace_file``'s trace read another way; a lab passes
    ``report(setup, run) -> lines``, its own summary of each run under a protocol."""
    lab = load_lab(lab_dir) if lab_dir else load_lab()
    parser = parser_for(lab)
    args = parser.parse_args(argv)
    if args.list_faults:
        print_faults()
        return 0
    try:
        protocol = extended_flags().read_protocol(args) if lab.extended_runs else None
    except UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.trace and protocol is None:
        parser.error("--trace is required")
    try:
        path = resolve_trace(args.trace or protocol.sizes, lab.traces_dir)
        trace = (read_trace or read_trace_file)(path)
        device = device_from_args(lab, args)
    except (TraceError, UsageError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    setup = None
    if lab.extended_runs:
        try:
            names, uses_budget = [p.name for p in lab.policies], _uses_budget(lab)
            setup = extended_flags().resolve(args, trace, device, names, uses_budget, protocol)
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
