"""Trusted replay of a run's event log against the device rules.

The replay works from the run file alone (the trace, the events, each request's reported status
and the run's limits), never from the engine's state. The device rules themselves (what a step
costs, the pages a cache holds, the caps, the token rule, the recompute target) come from the
lab engine's one rule module, ``servesim.rules``; the checks of the log are the replay's own:
index order, overlap, arrival, timing, and the engine rules on statuses (a rejected request never
runs, a request past its deadline without a first token is cancelled at that step end). This
module walks the log and applies each event; the checks of an event before it is applied are in
``replay_step_checks``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from servesim import components, decision, rules

from .problems import Collector, ProblemKind, close_ms, fmt_ms
from .replay_arrivals import ArrivalReplay
from .replay_cancels import CancelChecks, due_heap
from .replay_checks import (
    check_token_times,
    describe_batch,
    requests_match_trace,
)
from .replay_prefix import PrefixChecks
from .replay_state import ReqState, reported_statuses
from .replay_step_checks import StepChecks, Where
from .replay_stream import StreamChecks

BAD = ProblemKind.INVALID_SCHEDULE

__all__ = [
    "Replay",
    "check_token_times",
    "describe_batch",
    "replay_events",
    "requests_match_trace",
]


@dataclass
class Replay:
    """What the trusted replay rebuilt: token times per request and each event's true end."""

    token_times: dict[str, list[float]] = field(default_factory=dict)
    ends: list[float] = field(default_factory=list)
    metrics: dict[str, dict] = field(default_factory=dict)  # id -> request_metrics(...)
    summary: dict | None = None
    recomputes: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (count, tokens)
    statuses: dict[str, tuple[str, float | None]] = field(default_factory=dict)


def replay_events(
    events,
    trace,
    profile,
    *,
    timing,
    found,
    replay,
    requests=None,
    limits=None,
    wait_ms: float = 0.0,
) -> None:
    """Walk ``events`` in order, check each against the log rules and the device rules, and
    rebuild every request's token times into ``replay``.

    ``requests`` (the run's request entries) supply the reported statuses of an extended
    (unit 08) run; without them every request must complete. ``limits`` are the engine's
    limits the run must keep (``budget`` B, ``queueCap``): the grader passes the case's, never
    the run file's. ``wait_ms``: how long the device may idle past the arrival of the oldest
    request that has not started (a batcher's wait window; 0: never while a request is live).
    """
    walker = _Walker(trace, profile, found, timing, requests, limits)
    walker._pool_init(trace, profile)
    walker._stream_init(trace, requests)
    walker.wait_ms = wait_ms
    prev_end = 0.0  # the engine's clock starts at 0
    for k, event in enumerate(events):
        where = walker.log_checks(k, event, prev_end if k else -math.inf)
        if where is None:
            return
        prev_end = walker.step(k, event, where, prev_end)
        replay.ends.append(prev_end)
    walker.idle(prev_end, math.inf)  # the decision points after the last step
    walker._check_page_ops()
    walker._check_streams()
    walker.final_checks()
    replay.token_times = {rid: st.times for rid, st in walker.reqs.items()}
    replay.recomputes = {rid: (st.recomputes, st.recomputed) for rid, st in walker.reqs.items()}
    replay.statuses = walker.reported


class _Walker(StepChecks, CancelChecks, PrefixChecks, StreamChecks):
    """The replay's own state of every request, advanced one event at a time. At each decision
    point it fires the engine's rules in their one order (``servesim.decision``), through its
    own hooks (``admit_due``, ``expire_deadlines``, ``cancel_clients``, ``update_streams``)."""

    def __init__(self, trace, profile, found: Collector, timing, requests, limits):
        self.profile, self.found, self.timing = profile, found, timing
        self.wait_ms = 0.0
        self.reqs = {r.id: ReqState(r) for r in trace.requests}
        self.reported = reported_statuses(requests, trace)
        self.budget = (limits or {}).get("budget")
        self.arrivals = ArrivalReplay(trace, self.reported, (limits or {}).get("queueCap"), found)
        self.arrivals.admit_until(0.0)
        self.cancelled: set[str] = set()
        self.client_left: set[str] = set()
        self.deadlines = due_heap(trace, self.reported, "deadline_ms")
        self.client_cancels = due_heap(trace, self.reported, "cancel_ms")
        self.idle_window: tuple[float, float] | None = None  # (after, until) while idling
        self.point = decision.hooks((self,), components.decision_rules(profile))
        on = components.switched_on(profile, limits)
        self.rule_checks = [c.replay for c in on if c.replay is not None]  # a component's own
        self.specs = {rid: st.spec for rid, st in self.reqs.items()}  # the trace's requests

    def idle(self, after: float, until: float) -> None:
        """The decision points from the step end ``after`` to the next step's start ``until``
        (inf: after the last step): each time a paused stream resumes or stalls (the engine's
        clock stops there), then ``until``. A client cancel due in between may be seen at any
        of them, or at a policy's wait's end, which the log does not show: it must be reported
        between its time and ``until`` (``cancel_clients``)."""
        self.idle_window = (after, until)
        for clock in (*self._stream_changes(after, until), until):
            decision.fire(self.point, clock, False)
        self.idle_window = None

    def admit_due(self, clock: float) -> None:
        self.arrivals.admit_until(clock)

    def step(self, k: int, event: dict, where: Where, prev_end: float) -> float:
        """Check one event's start, members, duration and caps, apply it; return its true end."""
        start = event["startMs"]
        self._check_start(start, where, prev_end)
        self.idle(prev_end, start)
        self._stream_members(event, where)  # a paused stream may not run
        self._check_members(event, where)
        end = self._end(k, event, where)
        after = self._pages_step(event, where)
        positions = len(event["decode"]) + sum(c["tokens"] for c in event["prefill"])
        broken = rules.cap_violation(self.profile, after, positions, self.budget)
        if broken is not None:  # B, K and M after the step, before releases
            self.found.add(BAD, broken[0], f"{where}: {broken[1]}", start)
        self._component_checks(event, where)
        self._apply(event, end)
        self._stream_tokens(event, end)
        decision.fire(self.point, end, True)
        return end

    def _component_checks(self, event: dict, where: Where) -> None:
        """Each switched-on component's replay check of the event (``Component.replay``): a
        claim its rule refutes is an invalid schedule, in the component's words."""
        for check in self.rule_checks:
            for name, sentence in check(event, self.specs, self.profile):
                self.found.add(BAD, name, f"{where}: {sentence}", event["startMs"])

    def _end(self, k: int, event: dict, where: Where) -> float:
        start, batch = event["startMs"], _Batch(event)
        ids = [*event["decode"], *(c["id"] for c in event["prefill"]), *batch.moved]
        context = {rid: self.reqs[rid].cache for rid in ids}
        for chunk in event["prefill"]:  # a prefix hit is context the chunk reads
            context[chunk["id"]] += chunk.get("cached", 0)
        duration = rules.step_duration_ms(self.profile, batch, context)
        if self.timing != "virtual":
            if event["endMs"] < start:
                self.found.add(BAD, "events[].endMs", f"{where} ends before it starts", start)
            return event["endMs"]
        end = start + duration
        if not close_ms(event["endMs"], end):
            moved = rules.transfer_terms(self.profile, batch, context)
            transfer = rules.work_ms(self.profile, moved) if moved.moved_seqs else 0.0
            charged = (
                f" ({fmt_ms(transfer)} of it moving {moved.moved_pages} pages to or from the "
                "host pool)"
                if transfer
                else ""
            )
            self.found.add(
                ProblemKind.INCONSISTENT_STATS,
                "events[].endMs",
                f"events[{k}].endMs is {fmt_ms(event['endMs'])}, but {where} lasts "
                f"{fmt_ms(duration)} by the device rules{charged}, so it ends at {fmt_ms(end)}",
                start,
            )
        return end

    def _apply(self, event: dict, end: float) -> None:
        reqs = self.reqs
        for rid in event.get("preempt", []):
            reqs[rid].preempt(rules)
        for rid in event.get("swapOut", []):
            reqs[rid].swapped = True
        for rid in event.get("swapIn", []):
            reqs[rid].swapped = False
        for chunk in event["prefill"]:
            reqs[chunk["id"]].prefilled += chunk.get("cached", 0)
            reqs[chunk["id"]].prefill(chunk["tokens"], end, rules)
            self.arrivals.started(chunk["id"])
        for rid in event["decode"]:
            reqs[rid].decode(end)
        done = []
        for rid in {*event["decode"], *(c["id"] for c in event["prefill"])}:
            st = reqs[rid]
            if st.decoding and len(st.times) >= st.spec.output_tokens:
                st.finish()
                self.arrivals.left(rid)
                done.append(rid)
        self._pages_leave(done)

    def final_checks(self) -> None:
        for rid, st in self.reqs.items():
            status = self.reported[rid][0]
            never = rules.never_fits(self.profile, st.spec.input_tokens, st.spec.declared_output)
            if status == "rejected":
                continue
            if never:
                self.found.add(
                    BAD,
                    "kvPages",
                    f"'{rid}' could never fit the page pool: it must be rejected at arrival",
                )
            elif status == "cancelled":
                if rid not in self.cancelled:
                    self.found.add(
                        BAD,
                        "status",
                        f"'{rid}' is reported cancelled, but no step end passes its deadline "
                        "without its first token and its client does not cancel it",
                    )
            elif st.prefilled < st.target and not st.times:
                self.found.add(
                    BAD,
                    "prefill incomplete",
                    f"'{rid}' gets {st.prefilled} of its {st.target} prompt tokens prefilled",
                )
            elif st.swapped:
                self.found.add(
                    BAD,
                    "token count",
                    f"'{rid}' is still swapped out after the last event, with "
                    f"{len(st.times)} of its {st.spec.output_tokens} tokens",
                )
            elif len(st.times) != st.spec.output_tokens:
                self.found.add(
                    BAD,
                    "token count",
                    f"'{rid}' gets {len(st.times)} tokens from the events, "
                    f"it needs exactly {st.spec.output_tokens}",
                )


class _Batch:
    """An event seen as a batch by ``rules.step_duration_ms`` (decode ids, prefill chunks)."""

    def __init__(self, event: dict):
        self.decode = event["decode"]
        self.prefill = [_Chunk(c["id"], c["tokens"]) for c in event["prefill"]]
        self.prefill_tokens = sum(c.tokens for c in self.prefill)
        self.moved = (*event.get("swapOut", ()), *event.get("swapIn", ()))


@dataclass(frozen=True)
class _Chunk:
    id: str
    tokens: int
