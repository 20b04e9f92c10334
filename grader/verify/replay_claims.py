"""The replay's comparison of a run file's claims with what servesim's rules derived.

The replay (``replay``) drives servesim's state machine with the run's recorded decisions;
these functions hold each claim of the file against that state and raise ``Refuted`` for the
first one that differs, naming the field and what is wrong. They decide nothing themselves:
what a request may do is what the engine's state says of it (``servesim.Sequence``: its
phase, prefill, tokens and status; the output buffers of ``servesim.streaming``).
"""

from __future__ import annotations

import math

from servesim import rules
from servesim.sequence import Phase, Status
from servesim.streaming import STALLED

from .problems import EPS_MS, close_ms, fmt_ms
from .replay_checks import short_id


class Refuted(Exception):
    """A claim of the run file that the rules refute: its field, the sentence, when."""

    def __init__(self, field: str, sentence: str, at_ms: float | None = None):
        super().__init__(sentence)
        self.field, self.sentence, self.at_ms = field, sentence, at_ms


def reported_statuses(requests, trace) -> dict[str, tuple[str, float | None]]:
    """``id -> (status, statusMs)`` as the run reports them; a run without statuses says every
    request completes."""
    reported = {r.id: ("completed", None) for r in trace.requests}
    for req in requests or ():
        if isinstance(req, dict) and req.get("id") in reported and "status" in req:
            reported[req["id"]] = (req["status"], req.get("statusMs"))
    return reported


def log_checks(k: int, event: dict, prev_end: float, where, known) -> None:
    """The log's own rules: index, finite times, no overlap, no empty submission, members that
    are requests of the trace, each once."""
    start = event["startMs"]
    if event["index"] != k:
        raise Refuted("events[].index", f"event #{k} has index {event['index']}", start)
    if not (math.isfinite(start) and math.isfinite(event["endMs"])):
        raise Refuted("events[].startMs", f"event #{k}: times must be finite numbers")
    if start < prev_end - EPS_MS:
        raise Refuted(
            "overlap",
            f"{where} starts before the previous submission ends ({fmt_ms(prev_end)})",
            start,
        )
    ids = [*event["decode"], *(c["id"] for c in event["prefill"])]
    if not ids:
        raise Refuted("events[]", f"event #{k} at {fmt_ms(start)} is an empty submission", start)
    swap_in = event.get("swapIn", [])
    members = [*ids, *event.get("preempt", []), *event.get("swapOut", [])]
    members += [rid for rid in swap_in if rid not in set(event["decode"])]
    unknown = next((i for i in [*members, *swap_in] if i not in known), None)
    if unknown is not None:
        raise Refuted("events[]", f"{where} names unknown request '{short_id(unknown)}'", start)
    if len(set(members)) != len(members) or len(set(swap_in)) != len(swap_in):
        raise Refuted("events[]", f"{where} holds a request twice", start)


def members(event: dict, where, seqs, reported, state) -> None:
    """What each member of the event asks, against its state in the engine now."""
    start = event["startMs"]
    swap_out, swap_in = event.get("swapOut", []), event.get("swapIn", [])
    chunks, decode = event["prefill"], event["decode"]
    paused = state.streams.paused if state.streams is not None else {}
    for rid in (*decode, *(c["id"] for c in chunks)):
        if rid in paused:
            buf, device = paused[rid], state.device
            raise Refuted(
                "decode while paused",
                f"{where}: '{rid}' is paused since {fmt_ms(buf.pauses[-1][0])} (its output "
                f"buffer holds {buf.held(start):.0f} of "
                f"{device.stream_buffer_bytes} bytes) and may not run before it drains to the "
                f"low mark at {fmt_ms(buf.resume_at)}",
                start,
            )
    preempt = event.get("preempt", [])
    for rid in (*preempt, *swap_out, *swap_in, *decode, *(c["id"] for c in chunks)):
        if reported[rid][0] == "rejected":
            raise Refuted("status", f"{where}: '{rid}' is reported rejected at arrival", start)
        if seqs[rid].status is not None:
            raise Refuted(
                "terminated request scheduled",
                f"{where}: '{rid}' has already left the system (completed or cancelled)",
                start,
            )
    for rid in preempt:
        if not seqs[rid].holds_kv:
            raise Refuted("preempt", f"{where}: '{rid}' holds no KV cache", start)
    for rid in swap_out:
        if seqs[rid].phase is not Phase.DECODE:
            raise Refuted(
                "swapOut",
                f"{where}: '{rid}' is not running (only a running sequence can be swapped out)",
                start,
            )
    for rid in swap_in:
        if seqs[rid].phase is not Phase.SWAPPED:
            raise Refuted("swapIn", f"{where}: '{rid}' is not swapped out", start)
    for chunk in chunks:
        _chunk(chunk, seqs[chunk["id"]], where, start, state.device)
    for rid in decode:
        phase = seqs[rid].phase
        if phase is Phase.SWAPPED and rid not in swap_in:
            raise Refuted(
                "decode while swapped out",
                f"{where}: '{rid}' is swapped out (its cache is on the host pool)",
                start,
            )
        if phase is not Phase.DECODE and phase is not Phase.SWAPPED:
            raise Refuted(
                "decode before first token",
                f"{where}: '{rid}' has no first token yet (its prefill is not done)",
                start,
            )


def _chunk(chunk: dict, seq, where, start: float, device) -> None:
    if start < seq.arrival_ms - EPS_MS:
        raise Refuted(
            "prefill before arrival",
            f"{where}: '{seq.id}' arrives at {fmt_ms(seq.arrival_ms)}",
            start,
        )
    cached = chunk.get("cached", 0)
    if cached and (not device.prefix_caching or seq.prefilled):
        raise Refuted(
            "prefix hit",
            f"{where}: '{seq.id}' takes {cached} positions from a prefix cache, but only a "
            "sequence that starts its prefill on a device with prefixCaching can",
            start,
        )
    if chunk["fromToken"] != seq.prefilled + cached:
        raise Refuted(
            "prefill order",
            f"{where}: '{seq.id}' has {seq.prefilled + cached} prompt tokens prefilled, the "
            f"chunk starts at token {chunk['fromToken']}",
            start,
        )
    target = seq.prefill_target or seq.input_tokens
    if seq.prefilled + cached + chunk["tokens"] > target:
        what = "prompt" if target == seq.input_tokens else "prompt and emitted"
        raise Refuted(
            "prefill beyond inputTokens",
            f"{where}: '{seq.id}' has only {target} {what} tokens",
            start,
        )


def leave(seq, reported, window, state, record: dict) -> None:
    """``seq`` has just left by the rules (rejected, cancelled, stalled); the run must say so.
    ``window``: ``(after, until)`` while the device idles (a client cancel seen there may be
    reported anywhere from its time to ``until``), None at a step end."""
    status, at = reported
    rid, clock = seq.id, seq.status_ms
    if seq.status is Status.REJECTED:
        if status == "rejected":
            return
        if rules.never_fits(state.device, seq.input_tokens, seq.max_output_tokens):
            raise Refuted(
                "kvPages",
                f"'{rid}' could never fit the page pool: it must be rejected at arrival",
            )
        raise Refuted(
            "queueCap",
            f"'{rid}' arrives at {fmt_ms(seq.arrival_ms)} while {state.waiting.unstarted} "
            f"requests wait unstarted (queue cap {state.queue_cap}): it must be rejected",
            seq.arrival_ms,
        )
    if seq.status is not Status.CANCELLED:
        return
    reason = seq.cancel_reason
    if reason == "deadline" and (status != "cancelled" or not close_ms(at, clock)):
        raise Refuted(
            "deadline",
            f"'{rid}' has no first token at {fmt_ms(clock)}, past its deadline "
            f"({fmt_ms(seq.arrival_ms + seq.deadline_ms)}): it must be cancelled there",
            clock,
        )
    if reason == "client":
        due = seq.arrival_ms + seq.cancel_ms
        if window is None:
            ok = status == "cancelled" and close_ms(at, clock)
            when = f"at {fmt_ms(clock)}, the first step end after it"
        else:
            until = window[1]
            ok = status == "cancelled" and at is not None and due - EPS_MS <= at
            ok = ok and at <= until + EPS_MS
            when = f"between {fmt_ms(due)} and the next step's start ({fmt_ms(until)})"
        if not ok:
            raise Refuted(
                "cancel",
                f"the client of '{rid}' cancels at {fmt_ms(due)}: it must be reported "
                f"cancelled {when}",
                clock if window is None else window[1],
            )
    if reason not in ("deadline", "client", STALLED):  # a registered component's rule
        _cancelled_by_rule(rid, reason, status, at, clock, window)
    if reason == STALLED:
        buf = state.streams.buffers[rid]
        said = record.get("cancelReason")
        if status != "cancelled" or at is None or not close_ms(at, clock) or said != STALLED:
            raise Refuted(
                "stalled stream not cancelled",
                f"'{rid}' has been paused since {fmt_ms(buf.pauses[-1][0])}, past its pause "
                f"deadline at {fmt_ms(buf.stall_at)}, with its buffer above the low mark: it "
                f'must be reported cancelled ("stalled") at {fmt_ms(clock)}',
                clock,
            )


def _cancelled_by_rule(rid, reason, status, at, clock: float, window) -> None:
    """A request that a component's rule cancels at ``clock`` is reported cancelled there (or,
    at a decision point while idling, between the last step end and the next step start)."""
    if window is None:
        ok = status == "cancelled" and close_ms(at, clock)
        when = f"at {fmt_ms(clock)}"
    else:
        ok = status == "cancelled" and at is not None and window[0] - EPS_MS <= at
        ok = ok and at <= window[1] + EPS_MS
        when = f"between {fmt_ms(window[0])} and {fmt_ms(window[1])}"
    if not ok:
        raise Refuted(
            "status",
            f"'{rid}' is cancelled by the rule {reason!r} at {fmt_ms(clock)}: it must be "
            f"reported cancelled {when}",
            clock,
        )


def outcome(seq, status: str) -> None:
    """After the last event: what became of ``seq`` by the rules, against its reported
    ``status`` (leaving early was held against the run when it happened: ``leave``)."""
    rid = seq.id
    if status == "rejected" or seq.status is Status.CANCELLED:
        return
    if status == "cancelled":
        raise Refuted(
            "status",
            f"'{rid}' is reported cancelled, but no step end passes its deadline without its "
            "first token and its client does not cancel it",
        )
    if seq.status is Status.COMPLETED:
        return
    target, times = seq.prefill_target or seq.input_tokens, seq.token_times_ms
    if seq.prefilled < target and not times:
        raise Refuted(
            "prefill incomplete",
            f"'{rid}' gets {seq.prefilled} of its {target} prompt tokens prefilled",
        )
    if seq.phase is Phase.SWAPPED:
        raise Refuted(
            "token count",
            f"'{rid}' is still swapped out after the last event, with {len(times)} of its "
            f"{seq.output_tokens} tokens",
        )
    raise Refuted(
        "token count",
        f"'{rid}' gets {len(times)} tokens from the events, it needs exactly {seq.output_tokens}",
    )
