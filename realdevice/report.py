"""How close a calibrated virtual device comes to the real one on whole traces.

For a trace and a policy: a ``live`` run on the real device (the measured truth) and a plain
simulation on the calibrated profile. Per submission of the live run, the measured duration is
set against what the profile predicts for the same batch and context (residuals); per request,
TTFT and every ITL gap of the simulation are set against the real ones.
"""

from __future__ import annotations

import statistics

from servesim.engine import simulate
from servesim.runfile import build_run

from .fit import error_summary, residuals
from .runner import PolicyRun, run_live


def compare(trace, spec: PolicyRun, profile, real) -> dict:
    first = len(real.submissions)
    live, _ = run_live(trace, spec, profile, real)
    rows = residuals(profile, real.submissions[first:])
    sim = build_run(spec.name, spec.params, profile, simulate(trace, spec.policy, profile), None)
    return {
        "trace": trace.name,
        "policy": spec.name,
        "params": spec.params,
        "sameScheduleAsSimulation": live["realDevice"]["sameScheduleAsVirtual"],
        "residuals": rows,
        "residualError": error_summary(rows),
        **metric_errors(live, sim),
    }


def metric_errors(real_run: dict, sim_run: dict) -> dict:
    """TTFT and ITL of a simulated run against a real one, request by request, gap by gap."""
    real_by_id = {r["id"]: r for r in real_run["requests"]}
    ttft_errors, itl_errors = [], []
    for req in sim_run["requests"]:
        truth = real_by_id[req["id"]]
        ttft_errors.append((req["ttftMs"] - truth["ttftMs"], truth["ttftMs"]))
        itl_errors += [(a - b, b) for a, b in zip(req["itlMs"], truth["itlMs"], strict=True)]
    real, sim = real_run["summary"], sim_run["summary"]
    return {
        "ttft": _error(ttft_errors, real["ttftMs"], sim["ttftMs"]),
        "itl": _error(itl_errors, real["itlMs"], sim["itlMs"]),
    }


def _error(pairs, real_dist, sim_dist) -> dict | None:
    if not pairs:
        return None
    return {
        "realMeanMs": real_dist["mean"],
        "simMeanMs": sim_dist["mean"],
        "meanAbsErrorMs": statistics.fmean(abs(d) for d, _ in pairs),
        "meanAbsErrorPct": statistics.fmean(100 * abs(d) / t for d, t in pairs),
    }


def render(entries: list[dict], per_submission: bool = True) -> str:
    """Plain-text report: residual tables and the TTFT/ITL error of each trace and policy."""
    lines = []
    for e in entries:
        label = f"{e['trace']} / {e['policy']}" + "".join(
            f" {k}={v}" for k, v in e["params"].items()
        )
        err = e["residualError"]
        lines.append(
            f"{label}: {err['count']} submissions, |error| median {err['medianAbsPct']:.1f}% "
            f"mean {err['meanAbsPct']:.1f}%"
        )
        if per_submission:
            lines.append("    #  prefill  decode  measured ms  predicted ms  error %")
            for i, r in enumerate(e["residuals"]):
                lines.append(
                    f"  {i:3d}  {r['prefillTokens']:7d}  {r['decodeSeqs']:6d}  "
                    f"{r['measuredMs']:11.3f}  {r['predictedMs']:12.3f}  {r['errorPct']:7.1f}"
                )
        for metric in ("ttft", "itl"):
            m = e[metric]
            if m:
                lines.append(
                    f"  {metric.upper():4} mean real {m['realMeanMs']:.3f} ms, simulated "
                    f"{m['simMeanMs']:.3f} ms; per-value |error| {m['meanAbsErrorMs']:.3f} ms "
                    f"({m['meanAbsErrorPct']:.1f}%)"
                )
    return "\n".join(lines)
