"""Trusted replay of a run's event log against the device rules.

``replay_events`` walks the events in order, checks every submission (overlap, arrival, prefill
order and extent, decode readiness, token counts, the device's caps, and in ``virtual`` timing
each duration), and rebuilds every request's token times from the events that produced them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .problems import EPS_MS, Collector, ProblemKind, close_ms, fmt_ms


@dataclass
class Replay:
    """What the trusted replay rebuilt: token times per request and each event's true end."""

    token_times: dict[str, list[float]] = field(default_factory=dict)
    ends: list[float] = field(default_factory=list)
    metrics: dict[str, dict] = field(default_factory=dict)  # id -> request_metrics(...)
    summary: dict | None = None


def requests_match_trace(requests: list[dict], trace, found: Collector) -> bool:
    expected = [(r.id, r.arrival_ms, r.input_tokens, r.output_tokens) for r in trace.requests]
    if len(requests) != len(expected):
        found.add(
            ProblemKind.INVALID_SCHEDULE,
            "requests",
            f"the run has {len(requests)} requests, the trace {len(expected)}",
        )
        return False
    for number, (req, (rid, arrival, n_in, n_out)) in enumerate(
        zip(requests, expected, strict=False), 1
    ):
        same = (
            req.get("id") == rid
            and close_ms(req.get("arrivalMs"), arrival)
            and req.get("inputTokens") == n_in
            and req.get("outputTokens") == n_out
        )
        if not same:
            found.add(
                ProblemKind.INVALID_SCHEDULE,
                "requests",
                f"request #{number} of the run is not request '{rid}' of the trace "
                "(id, arrivalMs, inputTokens and outputTokens must match, in trace order)",
            )
            return False
    return True


def _describe(event: dict) -> str:
    return describe_batch(event.get("decode", []), event.get("prefill", []))


def describe_batch(decode: list[str], prefill: list[dict]) -> str:
    """``decode [A, S]``, ``prefill L tokens 0–2``, or both joined by ``+``."""
    parts = []
    if decode:
        parts.append(f"decode [{', '.join(decode)}]")
    for chunk in prefill:
        start = chunk["fromToken"]
        parts.append(f"prefill {chunk['id']} tokens {start}–{start + chunk['tokens']}")
    return " + ".join(parts) or "empty submission"


def replay_events(events, trace, profile, *, timing, found, replay, servesim) -> None:
    bad = ProblemKind.INVALID_SCHEDULE
    by_id = {r.id: r for r in trace.requests}
    prefilled = dict.fromkeys(by_id, 0)
    times: dict[str, list[float]] = {rid: [] for rid in by_id}
    prev_end = -math.inf
    for k, event in enumerate(events):
        start, end_reported = event["startMs"], event["endMs"]
        where = f"event #{k} at {fmt_ms(start)} ({_describe(event)})"
        if event["index"] != k:
            found.add(bad, "events[].index", f"event #{k} has index {event['index']}", start)
        if not (math.isfinite(start) and math.isfinite(end_reported)):
            found.add(bad, "events[].startMs", f"event #{k}: times must be finite numbers")
            return
        if start < prev_end - EPS_MS:
            found.add(
                bad,
                "overlap",
                f"{where} starts before the previous submission ends ({fmt_ms(prev_end)})",
                start,
            )
        ids = [*event["decode"], *(c["id"] for c in event["prefill"])]
        if not ids:
            found.add(
                bad, "events[]", f"event #{k} at {fmt_ms(start)} is an empty submission", start
            )
        if len(set(ids)) != len(ids):
            found.add(bad, "events[]", f"{where} holds a request twice", start)
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            found.add(bad, "events[]", f"{where} names unknown request '{unknown[0]}'", start)
            return
        for chunk in event["prefill"]:
            req = by_id[chunk["id"]]
            if start < req.arrival_ms - EPS_MS:
                found.add(
                    bad,
                    "prefill before arrival",
                    f"{where}: '{req.id}' arrives at {fmt_ms(req.arrival_ms)}",
                    start,
                )
            if chunk["fromToken"] != prefilled[req.id]:
                found.add(
                    bad,
                    "prefill order",
                    f"{where}: '{req.id}' has {prefilled[req.id]} prompt tokens prefilled, "
                    f"the chunk starts at token {chunk['fromToken']}",
                    start,
                )
            if prefilled[req.id] + chunk["tokens"] > req.input_tokens:
                found.add(
                    bad,
                    "prefill beyond inputTokens",
                    f"{where}: '{req.id}' has only {req.input_tokens} prompt tokens",
                    start,
                )
        for rid in event["decode"]:
            req, got = by_id[rid], times[rid]
            if not got or got[0] > start + EPS_MS:
                found.add(
                    bad,
                    "decode before first token",
                    f"{where}: '{rid}' has no first token yet (its prefill is not done)",
                    start,
                )
            elif len(got) >= req.output_tokens:
                found.add(
                    bad,
                    "tokens beyond outputTokens",
                    f"{where}: '{rid}' already has all {req.output_tokens} tokens",
                    start,
                )
        batch = servesim.Batch(
            decode=tuple(event["decode"]),
            prefill=tuple(servesim.PrefillChunk(c["id"], c["tokens"]) for c in event["prefill"]),
        )
        context = {i: prefilled[i] + max(len(times[i]) - 1, 0) for i in ids}
        duration = profile.duration_ms(batch, context)
        if timing == "virtual":
            end = start + duration
            if not close_ms(end_reported, end):
                found.add(
                    ProblemKind.INCONSISTENT_STATS,
                    "events[].endMs",
                    f"events[{k}].endMs is {fmt_ms(end_reported)}, but {where} lasts "
                    f"{fmt_ms(duration)} by the device rules, so it ends at {fmt_ms(end)}",
                    start,
                )
        else:
            end = end_reported
            if end < start:
                found.add(bad, "events[].endMs", f"{where} ends before it starts", start)
        _check_capacity(profile, event, by_id, prefilled, times, where=where, found=found)
        for chunk in event["prefill"]:
            before = prefilled[chunk["id"]]
            prefilled[chunk["id"]] = before + chunk["tokens"]
            done = by_id[chunk["id"]].input_tokens
            if before < done <= prefilled[chunk["id"]]:
                times[chunk["id"]].append(end)
        for rid in event["decode"]:
            times[rid].append(end)
        replay.ends.append(end)
        prev_end = end
    for rid, req in by_id.items():
        if prefilled[rid] < req.input_tokens:
            found.add(
                bad,
                "prefill incomplete",
                f"'{rid}' gets {prefilled[rid]} of its {req.input_tokens} prompt tokens prefilled",
            )
        elif len(times[rid]) != req.output_tokens:
            found.add(
                bad,
                "token count",
                f"'{rid}' gets {len(times[rid])} tokens from the events, "
                f"it needs exactly {req.output_tokens}",
            )
    replay.token_times = times


def _check_capacity(profile, event, by_id, prefilled, times, *, where, found) -> None:
    """The device's caps, checked before the batch runs exactly as the engine checks them."""
    if profile.max_active is None and profile.kv_pages is None:
        return
    start = event["startMs"]
    growth = {c["id"]: c["tokens"] for c in event["prefill"]} | dict.fromkeys(event["decode"], 1)
    holders = [
        rid
        for rid, req in by_id.items()
        if req.arrival_ms <= start + EPS_MS
        and (prefilled[rid] < req.input_tokens or len(times[rid]) < req.output_tokens)
        and (prefilled[rid] or rid in growth)
    ]
    if profile.max_active is not None and len(holders) > profile.max_active:
        found.add(
            ProblemKind.INVALID_SCHEDULE,
            "maxActive",
            f"{where}: {len(holders)} active sequences, cap {profile.max_active}",
            start,
        )
    if profile.kv_pages is not None:
        pages = sum(
            profile.pages_for(prefilled[r] + max(len(times[r]) - 1, 0) + growth.get(r, 0))
            for r in holders
        )
        if pages > profile.kv_pages:
            found.add(
                ProblemKind.INVALID_SCHEDULE,
                "kvPages",
                f"{where}: needs {pages} KV pages, budget {profile.kv_pages}",
                start,
            )


def check_token_times(requests: list[dict], replay: Replay, found: Collector) -> None:
    for req in requests:
        rebuilt, reported = replay.token_times[req["id"]], req["tokenTimesMs"]
        if len(reported) != len(rebuilt):
            found.add(
                ProblemKind.INVALID_SCHEDULE,
                "tokenTimesMs",
                f"'{req['id']}' reports {len(reported)} token times, its events give "
                f"{len(rebuilt)}",
            )
            continue
        for j, (a, b) in enumerate(zip(reported, rebuilt, strict=False)):
            if not close_ms(a, b):
                found.add(
                    ProblemKind.INVALID_SCHEDULE,
                    "tokenTimesMs",
                    f"token {j + 1} of '{req['id']}' is reported at {fmt_ms(a)}, but the event "
                    f"that produced it ends at {fmt_ms(b)}",
                    b,
                )
                break
