"""Trusted replay of a run's event log: the grader drives servesim's own state machine.

The replay runs ``servesim.state.EngineState`` in the grader's own process (its own import of
``servesim``, never the student's) through ``servesim.recorded.Recorded``: the state machine
stepped with the decisions the run file records (each event's batch; at each arrival, whether
the run rejected the request), with the engine's decision points fired between steps (the
components' rules in their one order) and the engine's own checks refusing an illegal batch.
Each component's replay check holds the event's fields it owns; every other claim of the file
(times, statuses, pages, pauses) is held against what the rules derived (``replay_claims``,
``replay_pages``, ``replay_streams``). A batch the rules refuse ends the replay, named."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from servesim import rules
from servesim.recorded import Recorded

from . import replay_claims as claims
from . import replay_streams
from .problems import EPS_MS, ProblemKind, close_ms, fmt_ms
from .replay_pages import PageClaims
from .wording import Where

BAD = ProblemKind.INVALID_SCHEDULE


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
    requests,
    limits=None,
    wait_ms: float = 0.0,
) -> None:
    """Drive the engine's state with ``events`` in order, hold each claim against the rules,
    and rebuild every request's token times into ``replay``.

    ``requests`` (the run's request entries, the trace's in its order: ``requests_match_trace``)
    supply the reported statuses (none: completed) and stream records. ``limits`` are the
    engine's limits the run must keep (``budget`` B, ``queueCap``): the grader passes the
    case's, never the run file's. ``wait_ms``: how long the device may idle past the arrival
    of the oldest request that has not started (a batcher's wait window; 0: never while a
    request is live).
    """
    walk = _Walk(trace, profile, timing, requests, limits or {}, wait_ms, found)
    walk.hold(walk.walk, events, replay.ends)
    seqs = walk.seqs.values()
    replay.token_times = {s.id: list(s.token_times_ms) for s in seqs}
    replay.recomputes = {s.id: (s.recomputes, s.recomputed_tokens) for s in seqs}
    replay.statuses = walk.reported


class _Walk:
    """The engine's state, driven by the run's recorded decisions (``servesim.recorded``) one
    event at a time, each claim held against it as it goes."""

    def __init__(self, trace, profile, timing, requests, limits, wait_ms, found):
        self.profile, self.timing, self.wait_ms, self.found = profile, timing, wait_ms, found
        self.records = {q["id"]: q for q in requests}
        self.reported = reported = {  # id -> (status, statusMs) as the run reports them
            rid: (q["status"], q.get("statusMs")) if "status" in q else ("completed", None)
            for rid, q in self.records.items()
        }
        self.run = Recorded(
            trace,
            profile,
            budget=limits.get("budget"),
            queue_cap=limits.get("queueCap"),
            rejected=[rid for rid, (status, _) in reported.items() if status == "rejected"],
            left=self._left,
        )
        self.state, self.seqs = self.run.state, self.run.seqs
        self.rule_checks = [c.replay for c in self.state.components if c.replay is not None]
        self.specs = {r.id: r for r in trace.requests}
        self.pages = PageClaims() if self.state.pool is not None else None
        self.noting = None  # (event, where) whose pageOps the prefix cache is noting now

    def hold(self, check, *args) -> None:
        """``check(*args)``, a claim the state does not depend on: one it refutes is named and
        the walk goes on (a batch the rules refuse ends it: ``step``)."""
        try:
            check(*args)
        except claims.Refuted as refuted:
            self.found.add(BAD, refuted.field, refuted.sentence, refuted.at_ms)

    def walk(self, events, ends: list) -> None:
        """Step through ``events`` from the engine's start (clock 0), each true end into
        ``ends``, then hold the outcomes."""
        prev_end = 0.0
        self.run.fire(prev_end, (prev_end, prev_end))  # the start
        for k, event in enumerate(events):
            prev_end = self.step(k, event, prev_end)
            ends.append(prev_end)
        self.close(prev_end)

    def _left(self, seq) -> None:
        record, window = self.records[seq.id], self.run.window
        self.hold(claims.leave, seq, self.reported[seq.id], window, self.state, record)

    def _check_idle(self, due: float, start: float, where) -> None:
        """The device idles only while nothing can run, a stream is paused, or within the
        policy's wait window (a measured run is not checked)."""
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
        claims.log_checks(k, event, prev_end if k else -math.inf, where)
        due = self.run.gap(prev_end, start)
        if self.timing == "virtual" and due is not None:
            self.hold(self._check_idle, due, start, where)
        self.run.reach(prev_end, start)
        claims.members(event, where, self.seqs, self.reported)
        for check in self.rule_checks:  # each component's own claims of the event
            for name, sentence in check(event, self.specs, self.profile):
                raise claims.Refuted(name, f"{where}: {sentence}", start)
        batch = self.run.batch_of(event)
        if (refused := self.run.check(batch, start)) is not None:
            raise claims.Refuted(refused[0], f"{where}: {refused[1]}", start)
        claims.chunk_starts(event, where, self.seqs)
        end = self._end(k, event, where, batch)
        self._check_page_ops()
        if (refused := self.run.apply(batch, start, end)) is not None:
            raise claims.Refuted(refused[0], f"{where}: {refused[1]}", start)
        if self.pages is not None:
            self.noting = (event, where)
        return end

    def _end(self, k: int, event: dict, where, batch) -> float:
        """The event's true end: its own in measured timing, else the device rules' (an
        ``endMs`` that differs is a wrong statistic, not a broken rule)."""
        start, profile = event["startMs"], self.profile
        if self.timing != "virtual":
            if event["endMs"] < start:
                raise claims.Refuted("events[].endMs", f"{where} ends before it starts", start)
            return event["endMs"]
        work, context = self.run.work(batch)
        end = start + profile.overhead_ms + work
        if not close_ms(event["endMs"], end):
            terms = rules.transfer_terms(profile, batch, context) if batch.moved else None
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
            self.hold(self.pages.check, *self.noting, self.state.pool.log)

    def close(self, prev_end: float) -> None:
        """The decision points after the last step, then every request's outcome and record."""
        self.run.gap(prev_end, math.inf)
        self.run.reach(prev_end, math.inf)
        self._check_page_ops()
        if (streams := self.state.streams) is not None:
            for rid, seq in self.seqs.items():
                status, record = self.reported[rid][0], self.records[rid]
                self.hold(replay_streams.check, seq, streams, record, status, self.profile)
        for rid, seq in self.seqs.items():
            self.hold(claims.outcome, seq, self.reported[rid][0])
