"""Compare a verified run with the golden (reference) run: schedule, token times, metrics.

Events match when they start at the same time (within 1e-6 ms), decode the same set of
requests and prefill the same chunks. The first event that differs is the *divergence*,
described as "at 3.50 ms expected decode [A], got prefill L tokens 0–2".
"""

from __future__ import annotations

from dataclasses import dataclass

from .run import EPS_MS, REQUEST_STATS, Replay, describe_batch, same_value

TIMELINE_CONTEXT = 3  # events shown before and after the divergence


@dataclass(frozen=True)
class Divergence:
    index: int  # event index where the runs part
    at_ms: float
    expected: str
    got: str

    def text(self) -> str:
        return f"at {self.at_ms:.2f} ms expected {self.expected}, got {self.got}"


@dataclass(frozen=True)
class Comparison:
    divergence: Divergence | None
    matching_requests: int  # requests whose token times equal golden
    total_requests: int
    metric_mismatch: str | None  # first recomputed metric that differs from golden

    @property
    def same(self) -> bool:
        return (
            self.divergence is None
            and self.metric_mismatch is None
            and self.matching_requests == self.total_requests
        )


def _norm(event: dict) -> tuple:
    chunks = sorted((c["id"], c["fromToken"], c["tokens"]) for c in event["prefill"])
    return frozenset(event["decode"]), tuple(chunks)


def _ordered_decode(event: dict, order: dict[str, int]) -> list[str]:
    return sorted(event["decode"], key=lambda rid: order.get(rid, len(order)))


def describe(event: dict | None, order: dict[str, int]) -> str:
    if event is None:
        return "nothing (the run has ended)"
    return describe_batch(_ordered_decode(event, order), event["prefill"])


def compare_with_golden(run: dict, replay: Replay, golden_run: dict) -> Comparison:
    order = {r["id"]: n for n, r in enumerate(golden_run["requests"])}
    got_events, want_events = run["events"], golden_run["events"]
    divergence = None
    for k in range(max(len(got_events), len(want_events))):
        got = got_events[k] if k < len(got_events) else None
        want = want_events[k] if k < len(want_events) else None
        if got is not None and want is not None:
            end = replay.ends[k] if k < len(replay.ends) else got["endMs"]
            same_time = abs(got["startMs"] - want["startMs"]) <= EPS_MS
            same_end = abs(end - want["endMs"]) <= EPS_MS
            if same_time and same_end and _norm(got) == _norm(want):
                continue
            if _norm(got) == _norm(want):
                at = min(got["startMs"], want["startMs"])
                divergence = Divergence(
                    k,
                    at,
                    f"{describe(want, order)} from {want['startMs']:.2f} to {want['endMs']:.2f} ms",
                    f"it from {got['startMs']:.2f} to {end:.2f} ms",
                )
                break
        at = (want or got)["startMs"]
        divergence = Divergence(k, at, describe(want, order), describe(got, order))
        break

    matching = 0
    for req in golden_run["requests"]:
        mine = replay.token_times.get(req["id"], [])
        if same_value(mine, req["tokenTimesMs"]):
            matching += 1
    mismatch = None
    for req in golden_run["requests"]:
        metrics = replay.metrics.get(req["id"])
        if metrics is None:
            mismatch = "requests"
            break
        bad = [name for name in REQUEST_STATS if not same_value(metrics[name], req[name])]
        if bad:
            mismatch = bad[0]
            break
    return Comparison(divergence, matching, len(golden_run["requests"]), mismatch)


def timeline_text(events: list[dict], order: dict[str, int], around: int, width: int = 36) -> list:
    """Short lines ``#3  3.50–4.75  decode [A]`` for the events near index ``around``."""
    lo, hi = max(0, around - TIMELINE_CONTEXT), around + TIMELINE_CONTEXT + 1
    lines = []
    for event in events[lo:hi]:
        what = describe(event, order)
        if len(what) > width:
            what = what[: width - 1] + "…"
        mark = ">" if event["index"] == around else " "
        start, end = f"{event['startMs']:.2f}", f"{event['endMs']:.2f}"
        lines.append(f"{mark}#{event['index']:<3} {start:>7}–{end:<7} {what}")
    return lines


def side_by_side(expected: list[dict], got: list[dict], order: dict[str, int], around: int) -> str:
    """Both timelines next to each other, the diverging event marked with ``>``."""
    left = timeline_text(expected, order, around)
    right = timeline_text(got, order, around)
    width = max([len("expected"), *map(len, left)])
    rows = [f"{'expected'.ljust(width)} | got"]
    for n in range(max(len(left), len(right))):
        a = left[n] if n < len(left) else ""
        b = right[n] if n < len(right) else ""
        rows.append(f"{a.ljust(width)} | {b}")
    return "\n".join(rows)
