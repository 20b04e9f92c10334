"""Statistics consistency: the reported metrics against those the replayed timeline implies.

The metrics are recomputed with the lab's own ``servesim.metrics`` from the rebuilt token times;
every per-request statistic and summary field the run reports must match them.
"""

from __future__ import annotations

from ..problems import Collector, ProblemKind, same_value, show_value
from ..replay import Replay

REQUEST_STATS = ("firstTokenMs", "finishMs", "ttftMs", "itlMs", "maxItlMs", "tpotMs", "e2eMs")


def check_statistics(run: dict, trace, replay: Replay, found: Collector, servesim) -> None:
    from servesim.metrics import request_metrics, summarize

    stats = ProblemKind.INCONSISTENT_STATS
    recomputed = []
    for req, spec in zip(run["requests"], trace.requests, strict=False):
        metrics = request_metrics(spec.arrival_ms, replay.token_times[spec.id])
        replay.metrics[spec.id] = metrics
        recomputed.append({**req, "tokenTimesMs": replay.token_times[spec.id], **metrics})
        for name in REQUEST_STATS:
            got, want = req.get(name), metrics[name]
            if not same_value(got, want):
                found.add(
                    stats,
                    name,
                    f"{name} of '{spec.id}' is reported as {show_value(got)}, the timeline gives "
                    f"{show_value(want)}",
                )
    events = [{**e, "endMs": end} for e, end in zip(run["events"], replay.ends, strict=False)]
    summary = summarize(recomputed, events)
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
