"""Trusted replay of one run entry against the device rules, and the metrics it implies.

``verify_run(run, trace, device, timing=...)`` never trusts a reported number. It walks the
event log in order, checks every submission against the device rules, rebuilds each request's
token times from the events that produced them, recomputes the metrics with the lab's own
``servesim.metrics`` and compares what the run reports with that recomputation.

Problems come in two kinds:

- ``INVALID_SCHEDULE``: the timeline breaks a device rule (overlap, prefill before arrival or
  past ``inputTokens``, decode before the first token, a wrong number of tokens, a submission
  whose tokens are not at its end, a wrong duration in ``virtual`` timing);
- ``INCONSISTENT_STATS``: the timeline is valid but a reported figure (``ttftMs``, ``itlMs``,
  ``events[].endMs``, a summary field, ...) disagrees with it. ``Problem.statistic`` names it.

``timing="virtual"`` (the simulator) checks each duration exactly; ``timing="measured"``
(a real GPU run) takes durations from the log and keeps every other check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from .units import Unit, load_unit

EPS_MS = 1e-6
MAX_DETAILS = 3


class ProblemKind(Enum):
    INVALID_SCHEDULE = "invalid_schedule"
    INCONSISTENT_STATS = "inconsistent_stats"


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    message: str  # full detail (ids, times): for visible feedback and staff only
    statistic: str | None = None  # the field that disagrees, e.g. "ttftMs", "events[].endMs"
    at_ms: float | None = None

    def safe_text(self) -> str:
        """A description with no ids, times or counts (hidden-case feedback)."""
        if self.kind is ProblemKind.INCONSISTENT_STATS:
            return f"reported statistic {self.statistic} is inconsistent with the timeline"
        return f"the timeline breaks a device rule ({self.statistic or 'schedule'})"


@dataclass
class Replay:
    """What the trusted replay rebuilt: token times per request and each event's true end."""

    token_times: dict[str, list[float]] = field(default_factory=dict)
    ends: list[float] = field(default_factory=list)
    metrics: dict[str, dict] = field(default_factory=dict)  # id -> request_metrics(...)
    summary: dict | None = None


def _engine(unit: Unit | str | None):
    from . import reference

    if unit is None or isinstance(unit, str):
        unit = load_unit(unit or "unit07")
    return reference.engine(unit)


def _ms(value: float) -> str:
    return f"{value:.2f} ms"


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= EPS_MS


class _Collector:
    """Keeps the first few messages per (kind, statistic) and counts the rest."""

    def __init__(self):
        self._groups: dict[tuple, list] = {}

    def add(self, kind: ProblemKind, statistic: str, message: str, at_ms=None) -> None:
        self._groups.setdefault((kind, statistic), []).append((message, at_ms))

    def has(self, kind: ProblemKind) -> bool:
        return any(k == kind for k, _ in self._groups)

    def problems(self) -> list[Problem]:
        out = []
        for (kind, statistic), items in self._groups.items():
            message, at_ms = items[0]
            if len(items) > 1:
                message += f" (and {len(items) - 1} more like it)"
            out.append(Problem(kind, message, statistic, at_ms))
        # invalid schedules first: they make the statistics meaningless
        out.sort(key=lambda p: p.kind is not ProblemKind.INVALID_SCHEDULE)
        return out


def verify_run(
    run: dict, trace, device: dict, *, timing: str = "virtual", unit: Unit | str | None = None
) -> list[Problem]:
    """Replay ``run`` (one entry of a run file, schema-valid) against ``trace`` on ``device``.

    ``trace`` is a parsed ``servesim.Trace`` or a trace document; ``device`` a device profile in
    its JSON form. Returns the problems found, invalid-schedule ones first (empty: all good).
    """
    problems, _ = replay_run(run, trace, device, timing=timing, unit=unit)
    return problems


def replay_run(
    run: dict, trace, device: dict, *, timing: str = "virtual", unit: Unit | str | None = None
) -> tuple[list[Problem], Replay]:
    """``verify_run`` plus what the replay rebuilt (for comparison with golden results)."""
    if timing not in ("virtual", "measured"):
        raise ValueError(f"timing must be 'virtual' or 'measured', got {timing!r}")
    servesim = _engine(unit)
    if isinstance(trace, dict):
        trace = servesim.parse_trace(trace, source="trace")
    profile = servesim.DeviceProfile.from_json(device, source="device")
    found = _Collector()
    replay = Replay()

    requests = run.get("requests", [])
    if not _requests_match_trace(requests, trace, found):
        return found.problems(), replay
    _replay_events(
        run.get("events", []),
        trace,
        profile,
        timing=timing,
        found=found,
        replay=replay,
        servesim=servesim,
    )
    if found.has(ProblemKind.INVALID_SCHEDULE):
        return found.problems(), replay
    _check_token_times(requests, replay, found)
    if found.has(ProblemKind.INVALID_SCHEDULE):
        return found.problems(), replay
    _check_statistics(run, trace, replay, found, servesim)
    return found.problems(), replay


def _requests_match_trace(requests: list[dict], trace, found: _Collector) -> bool:
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
            and _close(req.get("arrivalMs"), arrival)
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


def _replay_events(events, trace, profile, *, timing, found, replay, servesim) -> None:
    bad = ProblemKind.INVALID_SCHEDULE
    by_id = {r.id: r for r in trace.requests}
    prefilled = dict.fromkeys(by_id, 0)
    times: dict[str, list[float]] = {rid: [] for rid in by_id}
    prev_end = -math.inf
    for k, event in enumerate(events):
        start, end_reported = event["startMs"], event["endMs"]
        where = f"event #{k} at {_ms(start)} ({_describe(event)})"
        if event["index"] != k:
            found.add(bad, "events[].index", f"event #{k} has index {event['index']}", start)
        if not (math.isfinite(start) and math.isfinite(end_reported)):
            found.add(bad, "events[].startMs", f"event #{k}: times must be finite numbers")
            return
        if start < prev_end - EPS_MS:
            found.add(
                bad,
                "overlap",
                f"{where} starts before the previous submission ends ({_ms(prev_end)})",
                start,
            )
        ids = [*event["decode"], *(c["id"] for c in event["prefill"])]
        if not ids:
            found.add(bad, "events[]", f"event #{k} at {_ms(start)} is an empty submission", start)
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
                    f"{where}: '{req.id}' arrives at {_ms(req.arrival_ms)}",
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
            if not _close(end_reported, end):
                found.add(
                    ProblemKind.INCONSISTENT_STATS,
                    "events[].endMs",
                    f"events[{k}].endMs is {_ms(end_reported)}, but {where} lasts "
                    f"{_ms(duration)} by the device rules, so it ends at {_ms(end)}",
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


def _check_token_times(requests: list[dict], replay: Replay, found: _Collector) -> None:
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
            if not _close(a, b):
                found.add(
                    ProblemKind.INVALID_SCHEDULE,
                    "tokenTimesMs",
                    f"token {j + 1} of '{req['id']}' is reported at {_ms(a)}, but the event "
                    f"that produced it ends at {_ms(b)}",
                    b,
                )
                break


REQUEST_STATS = ("firstTokenMs", "finishMs", "ttftMs", "itlMs", "maxItlMs", "tpotMs", "e2eMs")


def _check_statistics(run: dict, trace, replay: Replay, found: _Collector, servesim) -> None:
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
                    f"{name} of '{spec.id}' is reported as {_show(got)}, the timeline gives "
                    f"{_show(want)}",
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
                        f"summary.{name}.{sub} is reported as {_show(got.get(sub))}, the "
                        f"timeline gives {_show(value)}",
                    )
                    break
        elif not same_value(got, want):
            found.add(
                stats,
                f"summary.{name}",
                f"summary.{name} is reported as {_show(got)}, the timeline gives {_show(want)}",
            )


def same_value(got, want) -> bool:
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(got) == len(want)
            and all(same_value(a, b) for a, b in zip(got, want, strict=False))
        )
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(same_value(got[k], want[k]) for k in want)
        )
    if isinstance(want, (str, bool)):
        return got == want
    if isinstance(want, int) and isinstance(got, int) and not isinstance(got, bool):
        return got == want
    return _close(got, want)


def _show(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value[:6]) + (", ...]" if len(value) > 6 else "]")
    return repr(value)
