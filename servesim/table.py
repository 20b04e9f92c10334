"""The comparison simulate.py prints: per-request timings, then one line per policy.

Everything printed is read from the run entries exactly as they go into the run file, so a
fault switch (servesim.faults) shows up here as numbers that disagree with the raw timeline.
Busy time is summed from the event log as written, not taken from the summary.
"""

from __future__ import annotations

from operator import itemgetter, ne, sub

from .compact import is_compact, request_count, step_starts

MAX_REQUEST_ROWS = 6  # past this many requests, print distributions instead

LEGEND = (
    "legend: request ids as in the trace; arrival and finish are clock times (ms since the trace"
    " starts),\n        TTFT, maxITL, TPOT and E2E are durations (ms); '-' means undefined"
    " (no gap between tokens)"
)


def _ms(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def _stat(stat: dict | None, key: str):
    """One figure of a summary statistic; None when nothing was measured (no request done)."""
    return stat[key] if stat else None


def _label(run: dict) -> str:
    params = ",".join(f"{k}={v}" for k, v in run["params"].items())
    return f"{run['policy']}({params})" if params else run["policy"]


def _grid(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _request_rows(runs: list[dict]) -> list[list[str]]:
    rows = [["policy", "request", "arrival", "TTFT", "maxITL", "TPOT", "E2E", "finish"]]
    for run in runs:
        for n, req in enumerate(run["requests"]):
            rows.append(
                [
                    _label(run) if n == 0 else "",
                    req["id"],
                    _ms(req["arrivalMs"]),
                    _ms(req["ttftMs"]),
                    _ms(req["maxItlMs"]),
                    _ms(req["tpotMs"]),
                    _ms(req["e2eMs"]),
                    _ms(req["finishMs"]),
                ]
            )
    return rows


def _distribution_rows(runs: list[dict]) -> list[list[str]]:
    rows = [["policy", "TTFT p50", "TTFT p99", "ITL p99", "max ITL", "TPOT p50", "E2E p99"]]
    for run in runs:
        s = run["summary"]
        rows.append(
            [
                _label(run),
                _ms(_stat(s["ttftMs"], "p50")),
                _ms(_stat(s["ttftMs"], "p99")),
                _ms(_stat(s["itlMs"], "p99")),
                _ms(s["maxItlMs"]),
                _ms(_stat(s["tpotMs"], "p50")),
                _ms(_stat(s["e2eMs"], "p99")),
            ]
        )
    return rows


def _step_totals(run: dict) -> tuple[int, int, int, float]:
    """Submissions, prefill and decode submissions, busy time, from the run's own event log."""
    if is_compact(run):  # servesim.compact: step times, chunks, decode steps
        starts, ends = step_starts(run), run["stepEndMs"]
        prefill = _distinct_steps(run["chunks"])
        busy = sum(map(sub, ends, starts))  # each step's end - start, in step order
        return len(starts), prefill, len(run["decodeSteps"]), busy
    events = run["events"]
    prefill = sum(1 for e in events if e["prefill"])
    decode = sum(1 for e in events if e["decode"])
    return len(events), prefill, decode, sum(e["endMs"] - e["startMs"] for e in events)


def _distinct_steps(chunks) -> int:
    """How many steps prefill, from a compact run's chunks (in step order, as the format keeps
    them): a count of changes, without a set of a million steps."""
    column = getattr(chunks, "column_values", None)  # a staff tool's table (grader.fastpath)
    steps = column(0) if column else list(map(itemgetter(0), chunks))
    return sum(map(ne, steps[1:], steps[:-1])) + (1 if steps else 0)


def _totals_rows(runs: list[dict]) -> list[list[str]]:
    rows = [["policy", "submissions", "prefill", "decode", "busy (events)", "all done"]]
    for run in runs:
        submissions, prefill, decode, busy = _step_totals(run)
        rows.append(
            [
                _label(run),
                str(submissions),
                str(prefill),
                str(decode),
                _ms(busy),
                _ms(run["summary"]["allDoneMs"]),
            ]
        )
    return rows


def render(trace_name: str, runs: list[dict]) -> str:
    device = runs[0]["device"]
    count = request_count(runs[0])
    lines = [
        f"trace {trace_name}: {count} request{'s' if count != 1 else ''}, "
        f"overhead {device['overheadMs']:g} ms per submission, times in ms"
    ]
    small = count <= MAX_REQUEST_ROWS
    lines += _grid(_request_rows(runs) if small else _distribution_rows(runs))
    lines.append("")
    lines += _grid(_totals_rows(runs))
    if small:
        lines.append(LEGEND)
    for run in runs:
        s = run["summary"]
        if "completed" in s:  # extended run files count every outcome
            lines.append(
                f"{_label(run)}: {s['completed']} completed, {s['rejected']} rejected, "
                f"{s['cancelled']} cancelled; {s['recomputes']} preemptions, "
                f"{s['recomputedTokens']} tokens recomputed"
            )
    faulty = [r["fault"] for r in runs if r["fault"]]
    if faulty:
        lines.append(f"fault switch on: {faulty[0]} (the statistics above are deliberately wrong)")
    return "\n".join(lines)
