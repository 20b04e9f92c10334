"""``run_gpu.py``: the lab's policies on a real transformer, or a calibration of the device.

Takes every flag of ``simulate.py`` (trace, policy, its parameters, device profile, output; in
unit 08 also tiers, K, M, loads, protocols and the queue cap) plus the real-device ones. The
real KV cache is the profile's (``runsetup``). Policies come from the lab's ``policies.py``
unless the caller passes ``policies_module`` (staff tools pass the reference solution), exactly
as ``servesim.cli.main``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from servesim.cli import EXIT_BAD_INPUT, EXIT_POLICY, print_faults
from servesim.cliargs import build_parser
from servesim.engine import PolicyError
from servesim.labconfig import load_lab
from servesim.policycall import import_policies
from servesim.runfile import build_document, dumps, write_atomic
from servesim.table import render as render_table
from servesim.trace import TraceError
from servesim.usage import UsageError

from . import calibrate, calibration, fit, report, runsetup
from .attention_plan import AttentionKind
from .backend import DTYPES
from .config import MODELS
from .executor import ExecutionError
from .kv_cache import KVCacheFullError
from .runner import MODES, RUNNERS, LiveModeError


def build_run_parser(lab):
    """``simulate.py``'s parser for ``lab`` plus the real-device flags (a flag the lab's parser
    already has, such as unit 08's ``--kv-pages``, is not declared twice: it sets the profile
    either way, and the real cache follows the profile)."""
    parser = build_parser(lab, prog="run_gpu.py")
    parser.description = (
        f"{lab.title}: run scheduling policies on a real (randomly initialised) transformer "
        "with a paged KV cache, or calibrate a device profile."
    )
    real = parser.add_argument_group("real device")
    real.add_argument("--mode", choices=MODES, default="replay", help="default: replay")
    real.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda if available")
    real.add_argument(
        "--model",
        default="tiny",
        metavar="PRESET_OR_FOLDER",
        help=f"a preset with random weights ({', '.join(MODELS)}; default: tiny) or a local "
        "Hugging Face checkpoint folder (config.json + *.safetensors; Llama, Qwen2, Mistral)",
    )
    real.add_argument(
        "--dtype",
        choices=sorted(DTYPES),
        help="default: float32 on cpu; on cuda the checkpoint's dtype, bfloat16 for a preset",
    )
    real.add_argument(
        "--attention",
        choices=(AttentionKind.EXACT, AttentionKind.PADDED),
        default=AttentionKind.EXACT,
        help="exact (default): each sequence attends over its own keys only (packed; one fused "
        "varlen call on CUDA); padded: groups of similar length padded to their widest",
    )
    real.add_argument("--page-tokens", type=int, help="KV page size (device pageTokens)")
    if "--kv-pages" not in parser._option_string_actions:
        real.add_argument(
            "--kv-pages",
            type=int,
            help="KV pages in the pool (device kvPages; default: none, the real pool then "
            "holds what a memory budget allows)",
        )
    real.add_argument(
        "--swap-long",
        type=int,
        metavar="MIN_TOKENS",
        help="swap victims with at least this many cached positions to the host pool instead "
        "of recomputing them (servesim.swapping.swap_long; needs device hostPages)",
    )
    real.add_argument(
        "--threads", type=int, help="CPU threads for torch (default on cpu: 1, steadier timings)"
    )
    real.add_argument(
        "--calibrate",
        action="store_true",
        help="measure step costs, fit a device profile, compare live runs with its simulation "
        "on --trace (default: the public traces of at most "
        f"{runsetup.COMPARE_MAX_REQUESTS} requests); --output gets the profile "
        "(simulate.py --device-profile accepts it)",
    )
    real.add_argument(
        "--grid",
        choices=sorted(calibrate.GRIDS),
        help="calibration grid (default: the device type's; quick: a small one for tests)",
    )
    real.add_argument("--quiet", action="store_true", help="calibration: no per-submission rows")
    real.add_argument("--report", help="calibration: also write the printed report to this file")
    return parser


def main(argv=None, policies_module=None, lab_dir: Path | None = None) -> int:
    lab = load_lab(lab_dir) if lab_dir else load_lab()
    parser = build_run_parser(lab)
    args = parser.parse_args(argv)
    if args.list_faults:
        print_faults()
        return 0
    if not args.trace and not args.calibrate and not getattr(args, "protocol", None):
        parser.error("--trace is required (or --calibrate)")
    if args.calibrate and not args.output:
        parser.error("--calibrate needs --output (the profile file)")
    if args.report and not args.calibrate:
        parser.error("--report goes with --calibrate")
    if args.format == "compact":
        parser.error("--format compact: real runs are written in full (each event has its times)")
    if policies_module is None:
        policies_module = import_policies(lab)
    try:
        setup = runsetup.resolve(lab, args, policies_module)
        real = runsetup.real_device(args, setup, calibrating=args.calibrate)
    except (TraceError, UsageError, RuntimeError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if args.calibrate:
            grid = calibrate.GRIDS[args.grid or real.device.type]
            document, text = _calibrate(real, setup, grid, quiet=args.quiet)
        else:
            document, text = _run(real, setup, args)
    except LiveModeError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
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


def _run(real, setup, args):
    runs = []
    for spec in setup.policies:
        try:
            run, trace = RUNNERS[args.mode](
                setup.trace, spec, setup.profile, real, fault=args.fault
            )
        except PolicyError as exc:  # with --policy all, say which policy broke a rule
            raise PolicyError(f"policy {spec.name} ({args.mode}): {exc}") from None
        runs.append(run)
    lines = [render_table(trace.name, runs), ""]
    desc = real.describe()
    lines.append(
        f"{args.mode} on {desc['backend']} ({desc['deviceName']}), model {real.config.name} "
        f"({real.config.parameters / 1e6:.2f} M parameters, {desc['dtype']}), "
        f"timing by {desc['timing']}, KV cache {desc['kvCache']['pages']} pages of "
        f"{desc['kvCache']['pageTokens']} tokens"
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
            f"of device time vs {virtual:.2f} ms virtual, at most "
            f"{max((e['kvPagesHeld'] for e in run['events']), default=0)} KV pages held{extra}"
        )
    return build_document(trace, runs), "\n".join(lines)


def _calibrate(real, setup, grid, *, quiet: bool):
    result = calibration.run(real, grid, setup.profile)
    entries = [
        report.compare(trace, spec, result.profile, real)
        for trace in setup.traces
        for spec in setup.policies
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
