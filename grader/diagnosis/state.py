"""The state both runs share at their first divergence, and the two steps taken from it.

The engine is deterministic: two runs of one case that took the same steps so far are in the
same state. So the diagnosis replays the reference's steps up to the first step where the
submission's verified run departs (``first_divergence``, which compares decode sets, prefill
chunks and preemptions), and compares the two steps taken from that one state: what the
submission's policy decided beside what the reference's decided. Request state comes from the
replay's own ``ReqState``; a request has left once its reported ``statusMs`` is past.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .reqstate import ReqState


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
    """Every request's state just before the divergent step, plus the case's caps."""

    reqs: dict[str, ReqState]
    rank: dict[str, int]  # arrival order, ties in trace order
    arrived: set[str]  # arrived by the step's start and not rejected
    left: set[str]  # completed or cancelled by the step's start
    admitted: dict[str, int]  # holders: index of the step that (re)started their prefill
    preempted: set[str]  # preempted earlier and not restarted since: they wait to resume
    budget: int | None
    max_active: int | None
    kv_pages: int | None
    pages_for: object  # tokens -> pages
    tenants: dict[str, str] = field(default_factory=dict)

    def holds(self, rid: str) -> bool:
        return rid in self.admitted

    def running(self) -> set[str]:
        """Holders with a first token that need more tokens: the decode candidates."""
        return {
            rid
            for rid in self.admitted
            if self.reqs[rid].decoding and len(self.reqs[rid].times) < self.output(rid)
        }

    def output(self, rid: str) -> int:
        return self.reqs[rid].spec.output_tokens

    def waiting_fresh(self) -> list[str]:
        """Arrived requests that never started, in arrival order."""
        out = [
            rid
            for rid in self.arrived - self.left
            if rid not in self.admitted and not self.reqs[rid].times
        ]
        return sorted(out, key=self.rank.__getitem__)

    def fresh_starts(self, step: Step) -> set[str]:
        """Requests that ``step`` starts for the first time (a chunk of a request that holds no
        KV starts it: at position 0, or after the positions it claims from a prefix cache)."""
        return {rid for rid in step.chunks if rid not in self.admitted and not self.reqs[rid].times}

    def restarts(self, step: Step) -> set[str]:
        """Requests that ``step`` (re)starts from their first token: new ones and victims."""
        return {rid for rid in step.chunks if not self.holds(rid)}

    def reservation_pages(self, rid: str) -> int:
        spec = self.reqs[rid].spec
        return self.pages_for(spec.input_tokens + spec.declared_output)


def first_divergence(got_events: list, want_events: list) -> int | None:
    """The index of the first step where the two logs differ in what they decode, prefill or
    preempt (None: they do not)."""
    for k in range(max(len(got_events), len(want_events))):
        got = got_events[k] if k < len(got_events) else None
        want = want_events[k] if k < len(want_events) else None
        if Step.of(got) != Step.of(want):
            return k
    return None


def shared_state(trace, profile, rules, want_run: dict, upto: int, limits: dict | None) -> Shared:
    """Replay the reference's first ``upto`` steps; the state at the start of step ``upto``."""
    events = want_run["events"]
    reqs = {r.id: ReqState(r) for r in trace.requests}
    rank = {r.id: n for n, r in enumerate(sorted(trace.requests, key=lambda r: r.arrival_ms))}
    statuses = {
        r["id"]: (r.get("status", "completed"), r.get("statusMs", r.get("finishMs")))
        for r in want_run["requests"]
    }
    admitted: dict[str, int] = {}
    preempted: set[str] = set()
    for k, event in enumerate(events[:upto]):
        for rid in event.get("preempt", ()):
            reqs[rid].preempt(rules)
            admitted.pop(rid, None)
            preempted.add(rid)
        for chunk in event["prefill"]:
            cached = chunk.get("cached", 0)  # positions taken from a prefix cache (a start)
            if chunk["fromToken"] == cached:
                admitted[chunk["id"]] = k
                preempted.discard(chunk["id"])
            reqs[chunk["id"]].prefilled += cached
            reqs[chunk["id"]].prefill(chunk["tokens"], event["endMs"], rules)
        for rid in event["decode"]:
            reqs[rid].decode(event["endMs"])
    start = events[upto]["startMs"] if upto < len(events) else float("inf")
    left = {
        rid
        for rid, (status, at) in statuses.items()
        if status in ("completed", "cancelled") and at is not None and at <= start
    }
    for rid in left:
        admitted.pop(rid, None)
    arrived = {
        r.id
        for r in trace.requests
        if r.arrival_ms <= start and statuses.get(r.id, ("completed",))[0] != "rejected"
    }
    return Shared(
        reqs=reqs,
        rank=rank,
        arrived=arrived,
        left=left,
        admitted=admitted,
        preempted=preempted,
        budget=(limits or {}).get("budget"),
        max_active=profile.max_active,
        kv_pages=profile.kv_pages,
        pages_for=lambda tokens: rules.pages_for(profile, tokens),
        tenants={r.id: r.tenant for r in trace.requests},
    )
