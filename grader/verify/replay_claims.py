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
from .wording import short_id


class Refuted(Exception):
    """A claim of the run file that the rules refute: its field, the sentence, when."""

    def __init__(self, field: str, sentence: str, at_ms: float | None = None):
        super().__init__(sentence)
        self.field, self.sentence, self.at_ms = field, sentence, at_ms


def log_checks(k: int, event: dict, prev_end: float, where) -> None:
    """The log's own rules: index, finite times, no overlap."""
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


def members(event: dict, where, seqs, reported) -> None:
    """The claims of the event's members that its batch does not carry (what the batch asks of
    each, an empty batch or a request named twice included, is the engine's own check:
    ``Recorded.check``): each is a request of the trace, none was reported rejected or has
    left, and no chunk starts before its arrival (the engine's clock starts at 0, so its own
    check passes a chunk of an event that starts before 0 and a request that arrives at 0)."""
    start = event["startMs"]
    named = (*event.get("preempt", []), *event.get("swapOut", []), *event.get("swapIn", []))
    for rid in (*named, *event["decode"], *(c["id"] for c in event["prefill"])):
        if rid not in seqs:
            raise Refuted("events[]", f"{where} names unknown request '{short_id(rid)}'", start)
        if reported[rid][0] == "rejected":
            raise Refuted("status", f"{where}: '{rid}' is reported rejected at arrival", start)
        if seqs[rid].status is not None:
            raise Refuted(
                "terminated request scheduled",
                f"{where}: '{rid}' has already left the system (completed or cancelled)",
                start,
            )
    for chunk in event["prefill"]:
        seq = seqs[chunk["id"]]
        if start < seq.arrival_ms - EPS_MS:
            raise Refuted(
                "prefill before arrival",
                f"{where}: '{seq.id}' arrives at {fmt_ms(seq.arrival_ms)}",
                start,
            )


def chunk_starts(event: dict, where, seqs) -> None:
    """Each chunk of a batch the engine accepts starts where its prefill stands now."""
    for chunk in event["prefill"]:
        seq, cached = seqs[chunk["id"]], chunk.get("cached", 0)
        if chunk["fromToken"] != seq.prefilled + cached:
            raise Refuted(
                "prefill order",
                f"{where}: '{seq.id}' has {seq.prefilled + cached} prompt tokens prefilled, the "
                f"chunk starts at token {chunk['fromToken']}",
                event["startMs"],
            )


def leave(seq, reported, window, state, record: dict) -> None:
    """``seq`` has just left by the rules (rejected, cancelled, stalled); the run must say so.
    ``window``: ``(after, until)`` while the device idles (a client cancel or a rule's cancel
    seen there may be reported from its time to ``until``), None at a step end."""
    status, at = reported
    rid, clock, reason = seq.id, seq.status_ms, seq.cancel_reason
    if seq.status is Status.REJECTED and status != "rejected":
        if rules.never_fits(state.device, seq.input_tokens, seq.max_output_tokens):
            raise Refuted(
                "kvPages", f"'{rid}' could never fit the page pool: it must be rejected at arrival"
            )
        raise Refuted(
            "queueCap",
            f"'{rid}' arrives at {fmt_ms(seq.arrival_ms)} while {state.waiting.unstarted} "
            f"requests wait unstarted (queue cap {state.queue_cap}): it must be rejected",
            seq.arrival_ms,
        )
    if seq.status is not Status.CANCELLED:
        return
    seen = window is not None and reason not in ("deadline", STALLED)  # while idling
    due = seq.arrival_ms + seq.cancel_ms if reason == "client" else clock
    if seen:
        since = due if reason == "client" else window[0]
        ok = at is not None and since - EPS_MS <= at <= window[1] + EPS_MS
        when = f"between {fmt_ms(since)} and the next step's start ({fmt_ms(window[1])})"
    else:
        ok, when = close_ms(at, clock), f"at {fmt_ms(clock)}"
        when += ", the first step end after it" if reason == "client" else ""
    if status == "cancelled" and ok and (reason != STALLED or record.get("cancelReason") == reason):
        return
    if reason == "deadline":
        deadline = fmt_ms(seq.arrival_ms + seq.deadline_ms)
        raise Refuted(
            "deadline",
            f"'{rid}' has no first token at {fmt_ms(clock)}, past its deadline ({deadline}): "
            "it must be cancelled there",
            clock,
        )
    if reason == STALLED:
        buf = state.streams.buffers[rid]
        raise Refuted(
            "stalled stream not cancelled",
            f"'{rid}' has been paused since {fmt_ms(buf.pauses[-1][0])}, past its pause "
            f"deadline at {fmt_ms(buf.stall_at)}, with its buffer above the low mark: it "
            f'must be reported cancelled ("stalled") at {fmt_ms(clock)}',
            clock,
        )
    cause = f"the client of '{rid}' cancels at {fmt_ms(due)}"
    if reason != "client":  # a registered component's rule
        cause = f"'{rid}' is cancelled by the rule {reason!r} at {fmt_ms(clock)}"
    field = "cancel" if reason == "client" else "status"
    at_ms = window[1] if seen and reason == "client" else clock
    raise Refuted(field, f"{cause}: it must be reported cancelled {when}", at_ms)


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
