"""The comparison table simulate.py prints: one row per policy."""

from __future__ import annotations

MAX_REQUEST_COLUMNS = 6  # past this many requests, print distributions instead


def _ms(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def _label(run: dict) -> str:
    params = ",".join(f"{k}={v}" for k, v in run["params"].items())
    return f"{run['policy']}({params})" if params else run["policy"]


def render(trace_name: str, runs: list[dict]) -> str:
    device = runs[0]["device"]
    count = len(runs[0]["requests"])
    lines = [
        f"trace {trace_name}: {count} request{'s' if count != 1 else ''}, "
        f"overhead {device['overheadMs']:g} ms per submission, times in ms"
    ]
    requests = runs[0]["requests"]
    if len(requests) <= MAX_REQUEST_COLUMNS:
        header = ["policy"]
        for req in requests:
            header += [f"{req['id']} TTFT", f"{req['id']} maxITL", f"{req['id']} finish"]
        header.append("all done")
        rows = [header]
        for run in runs:
            row = [_label(run)]
            for req in run["requests"]:
                row += [_ms(req["ttftMs"]), _ms(req["maxItlMs"]), _ms(req["finishMs"])]
            row.append(_ms(run["summary"]["allDoneMs"]))
            rows.append(row)
    else:
        rows = [["policy", "TTFT p50", "TTFT p99", "ITL p99", "max ITL", "all done", "submits"]]
        for run in runs:
            s = run["summary"]
            rows.append(
                [
                    _label(run),
                    _ms(s["ttftMs"]["p50"] if s["ttftMs"] else None),
                    _ms(s["ttftMs"]["p99"] if s["ttftMs"] else None),
                    _ms(s["itlMs"]["p99"] if s["itlMs"] else None),
                    _ms(s["maxItlMs"]),
                    _ms(s["allDoneMs"]),
                    str(s["submissions"]),
                ]
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    for run in runs:
        s = run["summary"]
        if "completed" in s:  # extended run files (unit 08) count every outcome
            lines.append(
                f"{_label(run)}: {s['completed']} completed, {s['rejected']} rejected, "
                f"{s['cancelled']} cancelled; {s['recomputedTokens']} tokens recomputed"
            )
    faulty = [r["fault"] for r in runs if r["fault"]]
    if faulty:
        lines.append(f"fault switch on: {faulty[0]} (the statistics above are deliberately wrong)")
    return "\n".join(lines)
