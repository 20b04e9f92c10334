"""What the viewer's two readers of a run entry share (``model`` for a full entry,
``compact_drive`` for a compact one): the state machine on the run's device and requests,
admitting as the run says (``recorded.Recorded``), the requests a step's prefill gave their
first token, and a request's lane fields."""

from __future__ import annotations

from dataclasses import fields

from ..device import DeviceProfile, _camel
from ..recorded import Recorded
from ..trace import REQUEST_FIELDS, parse_trace


def recorded(device: dict, requests: list[dict]) -> Recorded:
    """The state machine on a run's ``device`` and ``requests`` (its records), the requests
    the run rejected refused at arrival, counting pages on any device (``count_pages``)."""
    known = {_camel(f.name) for f in fields(DeviceProfile)}  # another field is drawn, not stepped
    doc = {k: v for k, v in device.items() if k in known}
    profile = DeviceProfile.from_json(doc, source="the run's device")
    rows = [{k: v for k, v in r.items() if k in REQUEST_FIELDS} for r in requests]
    trace = parse_trace({"name": "run", "requests": rows}, source="the run's requests")
    rejected = [r["id"] for r in requests if r.get("status") == "rejected"]
    return Recorded(trace, profile, rejected=rejected, count_pages=True)


def steady(events: list[dict], n: int) -> int:
    """The end (exclusive) of the steps from ``n`` that repeat step ``n``'s batch, a
    decode-only one, each starting where the one before ended (``n + 1``: none does)."""
    end = n + 1
    first = events[n]
    if first["prefill"] or not first["decode"] or _moves(first):
        return end
    while end < len(events):
        event = events[end]
        if event["decode"] != first["decode"] or event["prefill"] or _moves(event):
            break
        if event["startMs"] != events[end - 1]["endMs"]:
            break
        end += 1
    return end


def _moves(event: dict) -> bool:
    return bool(event.get("preempt") or event.get("swapOut") or event.get("swapIn"))


def firsts(prefill: list[tuple[str, int, int]], seqs: dict, end: float) -> list[str]:
    """The requests of a step's ``prefill`` chunks whose prefill (or recompute) ended with
    the step, just run to ``end``: the state gave them a token then."""
    out = []
    for rid, _, _ in prefill:
        times = seqs[rid].token_times_ms
        if times and times[-1] == end:
            out.append(rid)
    return out


def lane_fields(r: dict) -> tuple:
    """``model.Lane``'s fields of a full entry's request record."""
    times = r["tokenTimesMs"]
    status = r.get("status") or ("completed" if len(times) == r["outputTokens"] else "unfinished")
    end = r.get("statusMs") if "statusMs" in r else (times[-1] if times else None)
    first, last = (times[0], times[-1]) if times else (None, None)
    return (
        r["id"], r["arrivalMs"], status, end, r.get("ttftMs"), r.get("maxItlMs"), first, last,
        len(times),
    )  # fmt: skip
