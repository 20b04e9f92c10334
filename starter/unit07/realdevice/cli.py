"""``run_gpu.py``: the lab's policies on a real transformer, or a calibration of the device.

Takes every flag of ``simulate.py`` (trace, policy, its parameters, device profile, output)
plus the real-device ones. Policies come from the lab's ``policies.py`` unless the caller passes
``policies_module`` (staff tools pass the reference solution), exactly as ``servesim.cli.main``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from servesim.cli import (
    EXIT_BAD_INPUT,
    EXIT_POLICY,
    UsageError,
    build_parser,
    device_from_args,
    import_policies,
    print_faults,
    selected_policies,
)
from servesim.engine import PolicyError
from servesim.labconfig import load_lab
from servesim.runfile import build_document, dumps, write_atomic
from servesim.table import render as render_table
from servesim.trace import TraceError, read_trace_file, resolve_trace

from . import calibrate, calibration, fit, report
from .backend import DTYPES, RealDevice
from .config import MODELS
from .executor import ExecutionError
from .kv_cache import KVCacheFullError
from .runner import MODES, RUNNERS, PolicyRun


def build_run_parser(lab):
    parser = build_parser(lab, prog="run_gpu.py")
    parser.description = (
        f"{lab.title}: run scheduling policies on a real (randomly initialised) transformer "
        "with a paged KV cache, or calibrate a device profile."
    )
    real = parser.add_argument_group("real device")
    real.add_argument("--mode", choices=MODES, default="replay", help="default: replay")
    real.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda if available")
    real.add_argument("--model", choices=sorted(MODELS), default="tiny", help="default: tiny")
    real.add_argument(
        "--dtype", choices=sorted(DTYPES), help="default: float32 on cpu, bfloat16 on cuda"
    )
    real.add_argument("--page-tokens", type=int, help="KV page size (default: the profile's)")
    real.add_argument("--kv-pages", type=int, help="KV pages in the pool (default: memory budget)")
    real.add_argument(
        "--threads", type=int, help="CPU threads for torch (default on cpu: 1, steadier timings)"
    )
    real.add_argument(
        "--calibrate",
        action="store_true",
        help="measure step costs, fit a device profile, compare on the lesson traces; "
        "--output gets the profile (simulate.py --device-profile accepts it)",
    )
    real.add_argument(
        "--grid",
        choices=sorted(calibrate.GRIDS),
        help="calibration grid (default: the device type's; quick: a small one for tests)",
    )
    real.add_argument("--quiet", action="store_true", help="calibration: no per-submission rows")
    real.add_argument("--report", help="calibration: also write the printed report to this file")
    return parser


def policy_functions(lab, policies_module, selected: str, args):
    """A ``PolicyRun`` for each selected policy, in the lab's order.

    In a lab with extended run files (unit 08) the engine also enforces the policy's ``budget``
    parameter and the ``--queue-cap`` flag (when the lab has them), and the run file records them.
    """
    runs = []
    for spec, params, policy in selected_policies(lab, policies_module, selected, args):
        options, run_options = {}, {}
        if lab.extended_runs:
            budget, queue_cap = params.get("budget"), getattr(args, "queue_cap", None)
            options = {"budget": budget, "queue_cap": queue_cap}
            run_options = {"extended": True, "limits": {"budget": budget, "queueCap": queue_cap}}
        runs.append(PolicyRun(spec.name, params, policy, options, run_options))
    return runs


def _real_device(args, profile, traces) -> RealDevice:
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be >= 1, got {args.threads}")
    if args.threads or device == "cpu":
        torch.set_num_threads(args.threads or 1)
    for flag, value in (("--page-tokens", args.page_tokens), ("--kv-pages", args.kv_pages)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
    page_tokens = args.page_tokens or profile.page_tokens
    kv_pages = args.kv_pages or profile.kv_pages
    if kv_pages is None and args.calibrate:  # room for the grid and for every lesson request
        grid = calibrate.GRIDS[args.grid or device].pages_needed(page_tokens)
        lesson = sum(
            -(-(r.input_tokens + r.output_tokens) // page_tokens)
            for trace in traces
            for r in trace.requests
        )
        kv_pages = max(grid, lesson)
    return RealDevice(
        args.model, device=device, dtype=args.dtype, page_tokens=page_tokens, kv_pages=kv_pages
    )


def main(argv=None, policies_module=None, lab_dir: Path | None = None) -> int:
    lab = load_lab(lab_dir) if lab_dir else load_lab()
    parser = build_run_parser(lab)
    args = parser.parse_args(argv)
    if args.list_faults:
        print_faults()
        return 0
    if not args.trace and not args.calibrate:
        parser.error("--trace is required (or --calibrate)")
    if args.calibrate and not args.output:
        parser.error("--calibrate needs --output (the profile file)")
    if args.report and not args.calibrate:
        parser.error("--report goes with --calibrate")
    try:
        profile = device_from_args(lab, args)
        traces = (
            [read_trace_file(resolve_trace(args.trace, lab.traces_dir))]
            if args.trace
            else [read_trace_file(resolve_trace(t, lab.traces_dir)) for t in lab.public_traces]
        )
        real = _real_device(args, profile, traces)
    except (TraceError, UsageError, RuntimeError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if policies_module is None:
        policies_module = import_policies(lab)
    policies = policy_functions(lab, policies_module, args.policy, args)
    try:
        if args.calibrate:
            grid = calibrate.GRIDS[args.grid or real.device.type]
            document, text = _calibrate(real, profile, traces, policies, grid, quiet=args.quiet)
        else:
            document, text = _run(real, profile, traces[0], policies, args)
    except (PolicyError, KVCacheFullError, ExecutionError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_POLICY
    print(text)
    if args.output:
        write_atomic(Path(args.output), dumps(document))
        print(f"wrote {args.output}")
    if args.calibrate and args.report:
        write_atomic(Path(args.report), text + "\n")
        print(f"wrote {args.report}")
    return 0


def _run(real, profile, trace, policies, args):
    runs = [RUNNERS[args.mode](trace, spec, profile, real, fault=args.fault) for spec in policies]
    lines = [render_table(trace.name, runs), ""]
    desc = real.describe()
    lines.append(
        f"{args.mode} on {desc['backend']} ({desc['deviceName']}), model {real.config.name} "
        f"({real.config.parameters / 1e6:.2f} M parameters, {desc['dtype']}), "
        f"timing by {desc['timing']}"
    )
    for run in runs:
        measured = sum(e["measuredMs"] for e in run["events"])
        virtual = sum(e["virtualMs"] for e in run["events"])
        extra = ""
        if args.mode == "live":
            same = run["realDevice"]["sameScheduleAsVirtual"]
            extra = (
                ", same schedule as the virtual device"
                if same
                else (
                    f", schedule differs from the virtual device from submission "
                    f"{run['realDevice']['firstDifferentSubmission']}"
                )
            )
        lines.append(
            f"  {run['policy']}: {len(run['events'])} submissions, measured {measured:.2f} ms "
            f"of device time vs {virtual:.2f} ms virtual{extra}"
        )
    return build_document(trace, runs), "\n".join(lines)


def _calibrate(real, base, traces, policies, grid, *, quiet: bool):
    result = calibration.run(real, grid, base)
    entries = [
        report.compare(trace, spec, result.profile, real) for trace in traces for spec in policies
    ]
    document = result.document(real, grid, entries)
    trace_rows = [row for e in entries for row in e["residuals"]]
    document["calibration"]["summary"]["traceSubmissions"] = fit.error_summary(trace_rows)
    lines = [
        result.render(real.describe(), per_step=not quiet),
        "",
        "the context-aware profile on whole runs (live, lesson traces):",
        report.render(entries, per_submission=not quiet),
    ]
    return document, "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
