"""The replay's checks of one event before it is applied: the log's own rules (index order,
finite times, overlap, empty, repeated or unknown members), the engine's clock (no idling while
a request is live), and what each member may do in it (statuses, preempt and swap rules,
prefill order and size, decode only after the first token and up to ``outputTokens``).

``StepChecks`` is mixed into the replay's walker (``replay``), which holds the state they read:
``found``, ``reqs``, ``reported``, ``arrivals``, ``timing`` and ``wait_ms``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .problems import EPS_MS, ProblemKind, fmt_ms
from .replay_checks import describe_event, short_id

BAD = ProblemKind.INVALID_SCHEDULE


@dataclass(slots=True)
class Where:
    """How messages name an event (``event #k at t ms (what it holds)``), written out only when a
    message uses it: most events of a run raise none."""

    k: int
    event: dict

    def __str__(self) -> str:
        return f"event #{self.k} at {fmt_ms(self.event['startMs'])} ({describe_event(self.event)})"


class StepChecks:
    """The checks of one event against the replay's state, before ``step`` applies it."""

    def log_checks(self, k: int, event: dict, prev_end: float) -> Where | None:
        """Index, finite times, overlap, empty, repeated or unknown members.

        Returns how messages name the event, or None when the replay must stop here (a
        member list no replay can walk: it would only repeat one finding per entry).
        """
        found, start = self.found, event["startMs"]
        if event["index"] != k:
            found.add(BAD, "events[].index", f"event #{k} has index {event['index']}", start)
        if not (math.isfinite(start) and math.isfinite(event["endMs"])):
            found.add(BAD, "events[].startMs", f"event #{k}: times must be finite numbers")
            return None
        where = Where(k, event)
        if start < prev_end - EPS_MS:
            found.add(
                BAD,
                "overlap",
                f"{where} starts before the previous submission ends ({fmt_ms(prev_end)})",
                start,
            )
        ids = [*event["decode"], *(c["id"] for c in event["prefill"])]
        if not ids:
            found.add(
                BAD, "events[]", f"event #{k} at {fmt_ms(start)} is an empty submission", start
            )
        decoded = set(event["decode"])  # a sequence swapped in may decode in the same step
        swap_in = event.get("swapIn", [])
        members = [*ids, *event.get("preempt", []), *event.get("swapOut", [])]
        members += [rid for rid in swap_in if rid not in decoded]
        unknown = next((i for i in [*members, *swap_in] if i not in self.reqs), None)
        if unknown is not None:
            found.add(
                BAD, "events[]", f"{where} names unknown request '{short_id(unknown)}'", start
            )
            return None
        if len(set(members)) != len(members) or len(set(swap_in)) != len(swap_in):
            found.add(BAD, "events[]", f"{where} holds a request twice", start)
            return None
        return where

    def _check_start(self, start: float, where: Where, prev_end: float) -> None:
        """The engine never idles while a request is live, and an idle device jumps to the next
        arrival (virtual timing: a measured log may have gaps between steps); while a stream
        is paused (unit 09) it may idle."""
        if self.timing != "virtual":
            return
        due = self.arrivals.earliest_start(prev_end)
        if due is not None and self.wait_ms:  # a wait window: idle until its oldest waited it
            oldest = min(
                (self.reqs[rid].spec.arrival_ms for rid in self.arrivals.unstarted), default=due
            )
            due = max(due, min(oldest, due) + self.wait_ms)
        if due is not None and start > due + EPS_MS and not self._stream_idles():
            self.found.add(
                BAD,
                "idle",
                f"{where} starts after the device idled from {fmt_ms(due)} "
                "(a step starts when the previous one ends while a request is live, else at "
                "the next arrival)",
                start,
            )

    def _check_members(self, event: dict, where: Where) -> None:
        start, found = event["startMs"], self.found
        swap_out, swap_in = event.get("swapOut", []), event.get("swapIn", [])
        for rid in [
            *event.get("preempt", []),
            *swap_out,
            *swap_in,
            *event["decode"],
            *(c["id"] for c in event["prefill"]),
        ]:
            st = self.reqs[rid]
            if self.reported[rid][0] == "rejected":
                found.add(BAD, "status", f"{where}: '{rid}' is reported rejected at arrival", start)
            elif st.gone:
                found.add(
                    BAD,
                    "terminated request scheduled",
                    f"{where}: '{rid}' has already left the system (completed or cancelled)",
                    start,
                )
        for rid in event.get("preempt", []):
            if not self.reqs[rid].holds:
                found.add(BAD, "preempt", f"{where}: '{rid}' holds no KV cache", start)
        for rid in swap_out:
            st = self.reqs[rid]
            if st.swapped or not st.decoding:
                found.add(
                    BAD,
                    "swapOut",
                    f"{where}: '{rid}' is not running (only a running sequence can be swapped out)",
                    start,
                )
        for rid in swap_in:
            if not self.reqs[rid].swapped:
                found.add(BAD, "swapIn", f"{where}: '{rid}' is not swapped out", start)
        for chunk in event["prefill"]:
            self._check_chunk(chunk, where, start)
        for rid in event["decode"]:
            st = self.reqs[rid]
            if st.swapped and rid not in swap_in:
                found.add(
                    BAD,
                    "decode while swapped out",
                    f"{where}: '{rid}' is swapped out (its cache is on the host pool)",
                    start,
                )
            elif not st.decoding or st.times[0] > start + EPS_MS:
                found.add(
                    BAD,
                    "decode before first token",
                    f"{where}: '{rid}' has no first token yet (its prefill is not done)",
                    start,
                )
            elif len(st.times) >= st.spec.output_tokens:
                found.add(
                    BAD,
                    "tokens beyond outputTokens",
                    f"{where}: '{rid}' already has all {st.spec.output_tokens} tokens",
                    start,
                )

    def _check_chunk(self, chunk: dict, where: Where, start: float) -> None:
        st, found = self.reqs[chunk["id"]], self.found
        if start < st.spec.arrival_ms - EPS_MS:
            found.add(
                BAD,
                "prefill before arrival",
                f"{where}: '{st.spec.id}' arrives at {fmt_ms(st.spec.arrival_ms)}",
                start,
            )
        cached = chunk.get("cached", 0)
        if cached and (getattr(self, "pool", None) is None or st.prefilled):
            found.add(
                BAD,
                "prefix hit",
                f"{where}: '{st.spec.id}' takes {cached} positions from a prefix cache, but "
                "only a sequence that starts its prefill on a device with prefixCaching can",
                start,
            )
        if chunk["fromToken"] != st.prefilled + cached:
            found.add(
                BAD,
                "prefill order",
                f"{where}: '{st.spec.id}' has {st.prefilled + cached} prompt tokens prefilled, "
                f"the chunk starts at token {chunk['fromToken']}",
                start,
            )
        if st.prefilled + cached + chunk["tokens"] > st.target:
            what = "prompt" if st.target == st.spec.input_tokens else "prompt and emitted"
            found.add(
                BAD,
                "prefill beyond inputTokens",
                f"{where}: '{st.spec.id}' has only {st.target} {what} tokens",
                start,
            )
