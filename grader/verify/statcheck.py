"""Statistics consistency: the reported metrics against those the replayed timeline implies.

The metrics are recomputed with the lab's own ``servesim.metrics`` from the rebuilt token times;
every per-request statistic and summary field the run reports must match them.
"""

from __future__ import annotations

from .problems import Collector, ProblemKind, same_value, show_value
from .replay import Replay

REQUEST_STATS = ("firstTokenMs", "finishMs", "ttftMs", "itlMs", "maxItlMs", "tpotMs", "e2eMs")
EXTENDED_STATS = ("statusMs", "recomputes", "recomputedTokens")


def _metrics(spec, req: dict, replay: Replay) -> dict:
    """What the replayed timeline implies for one request: latency figures when it completed,
    and in an extended (unit 08) run its recompute counts."""
    from servesim.metrics import NO_METRICS, request_metrics

    times = replay.token_times[spec.id]
    completed = req.get("status", "completed") == "completed"
    metrics = dict(request_metrics(spec.arrival_ms, times) if completed and times else NO_METRICS)
    if "status" in req:
        metrics["recomputes"], metrics["recomputedTokens"] = replay.recomputes[spec.id]
        status, at = replay.statuses[spec.id]  # a cancellation time is checked by the replay
        if status == "completed":
            at = times[-1] if times else None
        elif status == "rejected":
            at = spec.arrival_ms
        metrics["statusMs"] = at
    return metrics


def check_statistics(run: dict, trace, replay: Replay, found: Collector) -> None:
    from servesim.metrics import summarize

    stats = ProblemKind.INCONSISTENT_STATS
    recomputed = []
    extended = any("status" in req for req in run["requests"])
    for req, spec in zip(run["requests"], trace.requests, strict=False):
        metrics = _metrics(spec, req, replay)
        replay.metrics[spec.id] = metrics
        recomputed.append({**req, "tokenTimesMs": replay.token_times[spec.id], **metrics})
        for name in (*REQUEST_STATS, *EXTENDED_STATS) if extended else REQUEST_STATS:
            got, want = req.get(name), metrics.get(name)
            if not same_value(got, want):
                found.add(
                    stats,
                    name,
                    f"{name} of '{spec.id}' is reported as {show_value(got)}, the timeline gives "
                    f"{show_value(want)}",
                )
    events = [{**e, "endMs": end} for e, end in zip(run["events"], replay.ends, strict=False)]
    summary = summarize(recomputed, events, extended=extended)
    replay.summary = summary
    reported = run.get("summary") or {}
    for name, want in summary.items():
        got = reported.get(name)
        if isinstance(want, dict) and isinstance(got, dict) and name not in ("weighting",):
            for sub, value in want.items():
                if not same_value(got.get(sub), value):
                    found.add(
                        stats,
                        f"summary.{name}",
                        f"summary.{name}.{sub} is reported as {show_value(got.get(sub))}, the "
                        f"timeline gives {show_value(value)}",
                    )
                    break
        elif not same_value(got, want):
            found.add(
                stats,
                f"summary.{name}",
                f"summary.{name} is reported as {show_value(got)}, the timeline gives "
                f"{show_value(want)}",
            )
