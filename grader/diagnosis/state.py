"""The state both runs share at their first divergence, and the two steps taken from it.

The engine is deterministic: two runs of one case that took the same steps so far are in the
same state. So the diagnosis drives servesim's own state machine (``servesim.recorded``) with
the reference's steps up to the first step where the submission's verified run departs
(``first_divergence``, which compares decode sets, prefill chunks and preemptions), and
compares the two steps taken from that one state: what the submission's policy decided beside
what the reference's decided. Every request's state is the engine's own ``Sequence``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from servesim.recorded import Recorded
from servesim.sequence import Phase, Sequence


@dataclass(frozen=True)
class Step:
    """One step as the diagnosis compares it."""

    decode: frozenset[str]
    chunks: dict[str, tuple[int, int]]  # id -> (fromToken, tokens)
    preempt: tuple[str, ...]

    @classmethod
    def of(cls, event: dict | None) -> Step:
        if event is None:
            return cls(frozenset(), {}, ())
        chunks = {c["id"]: (c["fromToken"], c["tokens"]) for c in event["prefill"]}
        return cls(frozenset(event["decode"]), chunks, tuple(event.get("preempt", ())))

    @property
    def positions(self) -> int:
        return len(self.decode) + sum(tokens for _, tokens in self.chunks.values())

    @property
    def prefill_tokens(self) -> int:
        return sum(tokens for _, tokens in self.chunks.values())


@dataclass
class Shared:
    """Every request's state just before the divergent step (the engine's), plus the case's
    caps."""

    seqs: dict[str, Sequence]  # every request of the trace, as the state machine left it
    rank: dict[str, int]  # arrival order, ties in trace order
    holding: dict[str, Sequence]  # holders of KV, in their (re)admission order
    running_ids: set[str]  # first token out, on the device
    reserved: int  # the engine's tally: pages reserved by the holders (0 without kvPages)
    budget: int | None
    max_active: int | None
    kv_pages: int | None
    pages_for: object  # tokens -> pages
    tenants: dict[str, str] = field(default_factory=dict)

    def holds(self, rid: str) -> bool:
        return rid in self.holding

    def running(self) -> set[str]:
        """The decode candidates: first token out, on the device."""
        return set(self.running_ids)

    @property
    def preempted(self) -> set[str]:
        """Preempted earlier and not restarted since: they wait to resume."""
        return {
            s.id for s in self.seqs.values() if s.status is None and s.recomputes and not s.holds_kv
        }

    def waiting_fresh(self) -> list[str]:
        """Arrived requests that wait with no KV and no token yet, in arrival order."""
        out = [
            s.id
            for s in self.seqs.values()
            if s.phase is Phase.PREFILL and not s.holds_kv and not s.token_times_ms
        ]
        return sorted(out, key=self.rank.__getitem__)

    def fresh_starts(self, step: Step) -> set[str]:
        """Requests that ``step`` starts for the first time (a chunk of a request that holds no
        KV starts it: at position 0, or after the positions it claims from a prefix cache)."""
        seqs = self.seqs
        return {rid for rid in step.chunks if not self.holds(rid) and not seqs[rid].token_times_ms}

    def restarts(self, step: Step) -> set[str]:
        """Requests that ``step`` (re)starts from their first token: new ones and victims."""
        return {rid for rid in step.chunks if not self.holds(rid)}

    def reservation_pages(self, rid: str) -> int:
        return self.pages_for(self.seqs[rid].reservation_tokens)


def first_divergence(got_events: list, want_events: list) -> int | None:
    """The index of the first step where the two logs differ in what they decode, prefill or
    preempt (None: they do not)."""
    for k in range(max(len(got_events), len(want_events))):
        got = got_events[k] if k < len(got_events) else None
        want = want_events[k] if k < len(want_events) else None
        if Step.of(got) != Step.of(want):
            return k
    return None


def shared_state(trace, profile, want_run: dict, upto: int, limits: dict | None) -> Shared:
    """The engine's state at the start of the reference's step ``upto``, reached by driving it
    with the reference's first ``upto`` steps and its rejections at arrival."""
    limits = limits or {}
    rejected = [r["id"] for r in want_run["requests"] if r.get("status") == "rejected"]
    run = Recorded(
        trace,
        profile,
        budget=limits.get("budget"),
        queue_cap=limits.get("queueCap"),
        rejected=rejected,
    )
    events, clock = want_run["events"], 0.0
    run.fire(clock, (clock, clock))  # the start
    for event in events[:upto]:
        start = event["startMs"]
        run.gap(clock, start)
        run.reach(clock, start)
        if run.step(run.batch_of(event), start, event["endMs"]) is not None:
            break  # a verified reference never is refused; stop where the rules did
        clock = event["endMs"]
    start = events[upto]["startMs"] if upto < len(events) else math.inf
    run.gap(clock, start)
    run.reach(clock, start)
    state = run.state
    rank = {r.id: n for n, r in enumerate(sorted(trace.requests, key=lambda r: r.arrival_ms))}
    return Shared(
        seqs=run.seqs,
        rank=rank,
        holding=dict(state.holding),
        running_ids={s.id for s in state.running},
        reserved=state.tally.reserved,
        budget=limits.get("budget"),
        max_active=profile.max_active,
        kv_pages=profile.kv_pages,
        pages_for=profile.pages_for,
        tenants={r.id: r.tenant for r in trace.requests},
    )
