#!/usr/bin/env python3
"""Device check of the real-device runner, sized for five minutes of device time.

1. Calibrates a device profile on the grid of ``run_gpu.py --calibrate`` (prefill, decode and
   mixed steps over chunk lengths, batch sizes and contexts): the affine and the context-aware
   fit, each with its held-out error; the context-aware profile is used below.
2. Runs the lesson traces live with both reference policies and compares them with the
   calibrated simulation (per-submission residuals, TTFT/ITL error).
3. Imports a 2,000-request window of the Azure LLM inference trace (CC-BY 4.0, see
   azure_trace.py) and runs it live with both policies: decode tokens/s, prefill tokens/s, share
   of wall time in Python scheduling vs device work, residuals of the calibrated profile.

On a machine without CUDA it runs on CPU with the tiny model and clips request lengths harder
(512 prompt / 64 output tokens unless given). A time budget (``--budget-s``), shared equally by
the Azure runs, stops them early and reports what ran (marked ``truncated``). The KV page pool
holds the whole Azure trace if ``--kv-gib`` allows (the unit 07 policies admit every request).

    python3 benchmarks/gpu_check.py [--device cuda] [--csv PATH] [--output runs/gpu-check.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAB = REPO / "starter" / "unit07"
DEFAULT_CSV = Path("..") / "shared" / "data" / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv"

sys.path.insert(0, str(REPO))  # the engine packages' one source
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from azure_trace import AzureTraceError, import_azure  # noqa: E402
from realdevice import calibrate, calibration, fit, report  # noqa: E402
from realdevice.backend import RealDevice, TimeBudgetExceeded  # noqa: E402
from realdevice.runner import PolicyRun  # noqa: E402
from servesim import parse_trace, read_trace_file, simulate  # noqa: E402
from servesim.labconfig import load_lab  # noqa: E402
from servesim.runfile import build_run, dumps, write_atomic  # noqa: E402


def reference_policies():
    spec = importlib.util.spec_from_file_location(
        "_gpu_check_policies", REPO / "solutions" / "unit07" / "policies.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args(argv=None):
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="gpu_check.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if cuda else "cpu")
    parser.add_argument("--model", help="default: small on cuda, tiny on cpu")
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help=f"default: {DEFAULT_CSV}")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--speedup", type=float, default=10.0, help="arrivals this much faster")
    parser.add_argument("--max-input", type=int, help="clip prompts (default 2048; cpu 512)")
    parser.add_argument("--max-output", type=int, help="clip outputs (default 256; cpu 64)")
    parser.add_argument("--kv-gib", type=float, help="KV cache memory cap (default 40; cpu 1)")
    parser.add_argument("--chunk", type=int, default=2, help="chunk for the lesson traces")
    parser.add_argument("--azure-chunk", type=int, default=512, help="chunk for the Azure trace")
    parser.add_argument("--grid", choices=sorted(calibrate.GRIDS), help="calibration grid")
    parser.add_argument("--budget-s", type=float, default=240.0, help="stop trace runs after this")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    parser.add_argument("--output", type=Path, default=Path("runs") / "gpu-check.json")
    args = parser.parse_args(argv)
    gpu = args.device == "cuda"
    args.model = args.model or ("small" if gpu else "tiny")
    args.max_input = args.max_input or (2048 if gpu else 512)
    args.max_output = args.max_output or (256 if gpu else 64)
    args.kv_gib = args.kv_gib or (40.0 if gpu else 1.0)
    if args.requests < 1 or args.chunk < 1 or args.azure_chunk < 1 or args.threads < 1:
        parser.error("--requests, --chunk, --azure-chunk and --threads must be >= 1")
    return args


def trace_figures(subs, wall_s: float) -> dict:
    """Throughput and where the wall time went, from the submissions of one live run."""
    decode = [s for s in subs if s.terms.decode_seqs and not s.terms.prefill_tokens]
    prefill = [s for s in subs if s.terms.prefill_tokens and not s.terms.decode_seqs]
    device_ms = sum(s.measured_ms for s in subs)
    execute_ms = sum(s.wall_ms for s in subs)
    wall_ms = wall_s * 1000.0

    def rate(tokens, items):
        busy = sum(s.measured_ms for s in items)
        return 1000.0 * tokens / busy if busy else None

    return {
        "submissions": len(subs),
        "decodeTokensPerS": rate(sum(s.terms.decode_seqs for s in decode), decode),
        "prefillTokensPerS": rate(sum(s.terms.prefill_tokens for s in prefill), prefill),
        "meanDecodeBatch": statistics.fmean(s.terms.decode_seqs for s in decode)
        if decode
        else None,
        "wallS": wall_s,
        "deviceShare": device_ms / wall_ms,  # measured device time (CUDA events / CPU clock)
        "executeShare": execute_ms / wall_ms,  # host time inside execute (plan, launch, wait)
        "pythonSchedulingShare": (wall_ms - execute_ms) / wall_ms,  # engine + policy
    }


def kv_pages(args, trace, grid, page_tokens: int = 16) -> int:
    """Pages for the calibration grid and for every request of ``trace`` at once, or what
    ``--kv-gib`` allows if less."""
    from realdevice.backend import DTYPES
    from realdevice.config import MODELS

    need = sum(-(-(r.input_tokens + r.output_tokens) // page_tokens) for r in trace.requests)
    need = max(need, grid.pages_needed(page_tokens))
    config = MODELS[args.model]
    dtype = DTYPES["bfloat16" if args.device == "cuda" else "float32"]
    per_page = config.kv_bytes_per_token(torch.finfo(dtype).bits // 8) * page_tokens
    return max(1, min(need, int(args.kv_gib * (1 << 30)) // per_page))


def run_trace(real, trace, spec, profile) -> dict:
    real.add_requests(trace.requests)
    first = len(real.submissions)
    started = time.perf_counter()
    truncated = False
    try:
        timeline = simulate(trace, spec.policy, profile, execute=real.execute)
    except TimeBudgetExceeded:
        truncated, timeline = True, None
    wall = time.perf_counter() - started
    subs = real.submissions[first:]
    out = {"policy": spec.name, "params": spec.params, "truncated": truncated}
    out |= trace_figures(subs, wall)
    rows = fit.residuals(profile, subs)
    out["residualError"] = fit.error_summary(rows) if subs else None
    out["measuredBusyS"] = sum(r["measuredMs"] for r in rows) / 1000
    out["predictedBusyS"] = sum(r["predictedMs"] for r in rows) / 1000
    if timeline is not None:
        live = build_run(spec.name, spec.params, profile, timeline, None)
        virtual = simulate(trace, spec.policy, profile)
        sim = build_run(spec.name, spec.params, profile, virtual, None)
        out |= report.metric_errors(live, sim)
        out["realAllDoneS"] = live["summary"]["allDoneMs"] / 1000
        out["simAllDoneS"] = sim["summary"]["allDoneMs"] / 1000
        out["simBusyS"] = sim["summary"]["busyMs"] / 1000
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    lab = load_lab(LAB)
    policies = reference_policies()
    specs = lambda chunk: [  # noqa: E731
        PolicyRun("fcfs", {}, policies.fcfs),
        PolicyRun("chunked", {"chunk": chunk}, lambda v: policies.chunked(v, chunk)),
    ]
    try:
        csv_path = args.csv if args.csv.is_absolute() else (REPO / args.csv).resolve()
        azure = parse_trace(
            import_azure(
                csv_path,
                requests=args.requests,
                speedup=args.speedup,
                max_input=args.max_input,
                max_output=args.max_output,
            ),
            source=str(args.csv),
        )
    except (AzureTraceError, ValueError) as exc:
        print(f"gpu_check.py: error: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    grid = calibrate.GRIDS[args.grid or args.device]
    real = RealDevice(args.model, device=args.device, kv_pages=kv_pages(args, azure, grid))
    desc = real.describe()
    print(
        f"device {desc['backend']} ({desc['deviceName']}), model {args.model} "
        f"({real.config.parameters / 1e6:.1f} M parameters, {desc['dtype']}), torch {desc['torch']}"
    )

    result = calibration.run(real, grid, lab.device)
    profile = result.profile
    print(f"calibration ({time.monotonic() - started:.1f} s):")
    print(result.render(desc, per_step=False))

    lesson = []
    for name in lab.public_traces:
        trace = read_trace_file(lab.traces_dir / f"{name}.json")
        lesson += [report.compare(trace, spec, profile, real) for spec in specs(args.chunk)]
    print(report.render(lesson, per_submission=False))

    print(f"{azure.name}: {len(azure.requests)} requests ({azure.description.split('. ')[0]})")
    azure_runs = []
    azure_specs = specs(args.azure_chunk)
    for index, spec in enumerate(azure_specs):
        left = started + args.budget_s - time.monotonic()
        real.deadline = time.monotonic() + max(left, 0.0) / (len(azure_specs) - index)
        azure_runs.append(run_trace(real, azure, spec, profile))
    for r in azure_runs:
        note = " (TRUNCATED by --budget-s)" if r["truncated"] else ""
        print(f"  {r['policy']}{''.join(f' {k}={v}' for k, v in r['params'].items())}{note}:")
        print(
            f"    {r['submissions']} submissions in {r['wallS']:.1f} s; decode "
            f"{_num(r['decodeTokensPerS'])} tok/s (mean batch {_num(r['meanDecodeBatch'])}), "
            f"prefill {_num(r['prefillTokensPerS'])} tok/s"
        )
        print(
            f"    wall time: device {100 * r['deviceShare']:.1f}%, inside execute "
            f"{100 * r['executeShare']:.1f}%, Python scheduling (engine + policy) "
            f"{100 * r['pythonSchedulingShare']:.1f}%"
        )
        if r["residualError"]:
            e = r["residualError"]
            print(
                f"    calibrated profile on these steps: median |error| {e['medianAbsPct']:.1f}%, "
                f"p90 {e['p90AbsPct']:.1f}%"
            )
        print(
            f"    busy time of these steps: measured {r['measuredBusyS']:.2f} s, calibrated "
            f"prediction {r['predictedBusyS']:.2f} s"
        )
        if "simAllDoneS" in r:
            print(
                f"    all done: real {r['realAllDoneS']:.2f} s, calibrated simulation "
                f"{r['simAllDoneS']:.2f} s (simulated busy {r['simBusyS']:.2f} s)"
            )
        for metric in ("ttft", "itl"):
            if r.get(metric):
                m = r[metric]
                print(
                    f"    {metric.upper()} mean real {m['realMeanMs']:.2f} ms vs simulated "
                    f"{m['simMeanMs']:.2f} ms; per-value |error| {m['meanAbsErrorPct']:.1f}%"
                )
    document = {
        "realDevice": desc,
        "profile": profile.to_json(),
        "calibration": result.document(real, grid)["calibration"],
        "lessonTraces": [{k: v for k, v in e.items() if k != "residuals"} for e in lesson],
        "azure": {"trace": azure.name, "description": azure.description, "runs": azure_runs},
        "totalS": time.monotonic() - started,
    }
    write_atomic(args.output, dumps(document))
    print(f"total {document['totalS']:.1f} s; wrote {args.output}")
    return 0


def _num(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


if __name__ == "__main__":
    sys.exit(main())
