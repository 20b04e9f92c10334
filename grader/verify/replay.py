"""Trusted replay of a run's event log: the grader drives servesim's own state machine.

The replay runs ``servesim.state.EngineState`` in the grader's own process (its own import of
``servesim``, never the student's) with the decisions the run file records: at each event the
batch it lists (decode, prefill chunks, preemptions, swaps), and at each arrival whether the
run rejected the request (an admission choice the rules allow). Between two events it fires the
decision points the engine would (``servesim.decision``: the components' rules in their one
order), so arrivals, deadlines, client cancels and output buffers are the engine's. The
engine's own checks refuse an illegal batch (``servesim.batchcheck``, each component's
``check``); each component's replay check holds the event's fields it owns; every other claim
of the file (times, statuses, pages, pauses) is held against what the rules derived
(``replay_claims``). The replay stops at the first claim the rules refute and names it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from servesim import decision, rules
from servesim.arrivals import Arrivals
from servesim.batch import Batch, PrefillChunk
from servesim.batchcheck import check_batch
from servesim.contract import PolicyError
from servesim.engine import step_context
from servesim.state import EngineState

from . import replay_claims as claims
from . import replay_streams
from .problems import EPS_MS, ProblemKind, close_ms, fmt_ms
from .replay_checks import Where, check_token_times, describe_batch, requests_match_trace
from .replay_pages import PageClaims

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
    """Drive the engine's state with ``events`` in order, hold each claim against the rules,
    and rebuild every request's token times into ``replay``.

    ``requests`` (the run's request entries) supply the reported statuses and stream records;
    without them every request must complete. ``limits`` are the engine's limits the run must
    keep (``budget`` B, ``queueCap``): the grader passes the case's, never the run file's.
    ``wait_ms``: how long the device may idle past the arrival of the oldest request that has
    not started (a batcher's wait window; 0: never while a request is live).
    """
    walk = _Walk(trace, profile, timing, requests, limits or {}, wait_ms, found)
    try:
        prev_end = 0.0  # the engine's clock starts at 0
        walk.fire(prev_end, (prev_end, prev_end))  # the start
        for k, event in enumerate(events):
            prev_end = walk.step(k, event, prev_end)
            replay.ends.append(prev_end)
        walk.close(prev_end)
    except claims.Refuted as refuted:
        found.add(BAD, refuted.field, refuted.sentence, refuted.at_ms)
    seqs = walk.seqs.values()
    replay.token_times = {s.id: list(s.token_times_ms) for s in seqs}
    replay.recomputes = {s.id: (s.recomputes, s.recomputed_tokens) for s in seqs}
    replay.statuses = walk.reported


class _Source(Arrivals):
    """The trace's arrivals; each request that leaves is held against the run at once."""

    def __init__(self, trace, walk: _Walk):
        super().__init__(trace)
        self.walk = walk

    def left(self, seq, at_ms: float) -> None:
        walk = self.walk
        record = walk.records.get(seq.id, {})
        walk.hold(claims.leave, seq, walk.reported[seq.id], walk.window, walk.state, record)


class _Walk:
    """The engine's state, driven by the run's recorded decisions one event at a time."""

    def __init__(self, trace, profile, timing, requests, limits, wait_ms, found):
        self.profile, self.timing, self.wait_ms, self.found = profile, timing, wait_ms, found
        self.reported = claims.reported_statuses(requests, trace)
        self.records = {q["id"]: q for q in requests or () if isinstance(q, dict) and "id" in q}
        self.window: tuple[float, float] | None = None  # (after, until) while idling
        self.source = source = _Source(trace, self)
        self.state = state = EngineState(
            profile,
            source,
            limits.get("budget"),
            queue_cap=limits.get("queueCap"),
            admit=self._admits,
        )
        self.seqs = {seq.id: seq for seq in source.sequences}  # trace order
        self.point = decision.hooks((state, *state.parts), state.rules)
        self.part_checks = state.hooks("check")
        self.rule_checks = [c.replay for c in state.components if c.replay is not None]
        self.specs = {r.id: r for r in trace.requests}
        self.pages = PageClaims() if state.pool is not None else None
        self.noting = None  # (event, where) whose pageOps the prefix cache is noting now
        self.previous: Batch | None = None
        self.needs_context = rules.reads_context(profile)

    def hold(self, check, *args) -> None:
        """``check(*args)``, a claim the state does not depend on: one it refutes is named and
        the walk goes on (a batch the rules refuse ends it: ``step``)."""
        try:
            check(*args)
        except claims.Refuted as refuted:
            self.found.add(BAD, refuted.field, refuted.sentence, refuted.at_ms)

    def _admits(self, seq, view) -> bool:
        """The run's admission choice: a request it reports rejected was rejected."""
        return self.reported[seq.id][0] != "rejected"

    def fire(self, clock: float, window: tuple[float, float] | None) -> None:
        """One decision point at ``clock``: a step end (``window`` None) or while idling."""
        self.window = window
        decision.fire(self.point, clock, window is None)

    def gap(self, after: float, until: float, where) -> None:
        """The decision points after the step end ``after`` up to the next step's start
        ``until`` (inf: after the last step): where an idle device's clock jumps (an arrival,
        a resume, a stall, a client cancel) or a policy's wait ends (an arrival, a resume, a
        stall), then ``until``. The device may idle only while nothing can run, a stream is
        paused, within the policy's wait window, or on a measured run."""
        if until <= after:  # the step starts where the last one ended: no point between
            return
        state, source = self.state, self.source
        clock, due = after, None
        while True:
            idle = not state.live or state.blocks()
            if idle:
                wake = state.idle_until(clock)
                wake = math.inf if wake == clock else wake
                if due is None and wake >= until and not state.live and wake < math.inf:
                    due = wake
            else:
                due = clock if due is None else due
                wake = min(state.wait_stop(), source.next_ms() if source else math.inf)
            if not clock < wake < until:
                break
            self.fire(wake, (after, until))
            clock = wake
        if where is not None and self.timing == "virtual" and due is not None:
            self.hold(self._check_idle, due, until, where)
        if until > clock:
            self.fire(until, (after, until))

    def _check_idle(self, due: float, start: float, where) -> None:
        state = self.state
        if self.wait_ms:  # a wait window: idle until its oldest waited it
            oldest = min((s.arrival_ms for s in state.live.values() if not s.started), default=due)
            due = max(due, min(oldest, due) + self.wait_ms)
        if start > due + EPS_MS and not (state.streams is not None and state.streams.paused):
            raise claims.Refuted(
                "idle",
                f"{where} starts after the device idled from {fmt_ms(due)} (a step starts when "
                "the previous one ends while a request is live, else at the next arrival)",
                start,
            )

    def step(self, k: int, event: dict, prev_end: float) -> float:
        """Hold one event against the rules and apply it; return its true end."""
        where, start = Where(k, event), event["startMs"]
        claims.log_checks(k, event, prev_end if k else -math.inf, where, self.seqs)
        self.gap(prev_end, start, where)
        state = self.state
        claims.members(event, where, self.seqs, self.reported, state)
        batch = _batch(event)
        end = self._end(k, event, where, batch)
        self._check_page_ops()
        for check in self.rule_checks:  # each component's own claims of the event
            for name, sentence in check(event, self.specs, self.profile):
                raise claims.Refuted(name, f"{where}: {sentence}", start)
        view = state.view(start, self.previous)
        try:  # the engine's checks, then the step; the prefix cache refuses what it cannot serve
            check_batch(batch, view, known=self.source.ids, limits=False)
            for check in self.part_checks:
                if (refused := check(batch, view)) is not None:
                    raise PolicyError(refused)
            broken = view.broken_limit(batch, trial=False)
            if broken is not None:
                raise claims.Refuted(broken[0], f"{where}: {broken[1]}", start)
            state.run_step(batch, start, end)
        except PolicyError as exc:
            name = getattr(exc, "limit", "events[]")
            raise claims.Refuted(
                name, f"{where}: {str(exc).removeprefix('batch: ')}", start
            ) from None
        if self.pages is not None:
            self.noting = (event, where)
        self.previous = batch
        self.fire(end, None)
        return end

    def _end(self, k: int, event: dict, where, batch: Batch) -> float:
        start, state, profile = event["startMs"], self.state, self.profile
        moved = batch.moved
        context = step_context(batch, state.live) if self.needs_context or moved else {}
        work = profile.work_ms(batch, context)
        if self.timing != "virtual":
            if event["endMs"] < start:
                raise claims.Refuted("events[].endMs", f"{where} ends before it starts", start)
            return event["endMs"]
        end = start + profile.overhead_ms + work
        if not close_ms(event["endMs"], end):
            terms = rules.transfer_terms(profile, batch, context) if moved else None
            transfer = rules.work_ms(profile, terms) if terms is not None else 0.0
            charged = (
                f" ({fmt_ms(transfer)} of it moving {terms.moved_pages} pages to or from the "
                "host pool)"
                if transfer
                else ""
            )
            self.found.add(
                ProblemKind.INCONSISTENT_STATS,
                "events[].endMs",
                f"events[{k}].endMs is {fmt_ms(event['endMs'])}, but {where} lasts "
                f"{fmt_ms(profile.overhead_ms + work)} by the device rules{charged}, so it "
                f"ends at {fmt_ms(end)}",
                start,
            )
        return end

    def _check_page_ops(self) -> None:
        """The page changes the noted event lists (from its start to the next step's), against
        the prefix cache's own."""
        if self.noting is not None:
            event, where = self.noting
            self.hold(self.pages.check, event, where, self.state.pool.log)

    def close(self, prev_end: float) -> None:
        """The decision points after the last step, then every request's outcome and record."""
        self.gap(prev_end, math.inf, None)
        self._check_page_ops()
        streams = self.state.streams
        for rid, seq in self.seqs.items():
            status = self.reported[rid][0]
            if streams is not None:
                buf = streams.buffers.get(rid)
                self.hold(
                    replay_streams.check, seq, buf, self.records.get(rid, {}), status, self.profile
                )
        for rid, seq in self.seqs.items():
            self.hold(claims.outcome, seq, self.reported[rid][0])


def _batch(event: dict) -> Batch:
    """The batch an event records, as the engine takes it."""
    return Batch(
        event["decode"],
        tuple(PrefillChunk(c["id"], c["tokens"], c.get("cached", 0)) for c in event["prefill"]),
        event.get("preempt", ()),
        event.get("swapOut", ()),
        event.get("swapIn", ()),
    )
