"""Exercise 31.11 on the lab's engine: cancellation, page release and re-queue.

The chapter's event sequence: request r holds one reference to a shared page p; the client
cancels r, which ends r once (a terminal state); r's release is recorded once per (r, page) and
takes one reference off p; a preemption's re-queue that arrives late finds r terminated and does
nothing; a second cancel changes nothing either. p is freed only when no one references it, and
its generation stops a stale event from freeing p after it was reused.

Here r and s share a 16-token system prompt (page p) on a 4-page pool of 16-token pages; t, a
request of its own, arrives later and needs every page, so p is evicted and reused. The script
drives the engine's own state (``servesim.state.EngineState``) step by step, prints every event
and page reference change, and checks each invariant; it exits 1 if one fails.

    python3 exercises.py 31.11
"""

from __future__ import annotations

from servesim import Batch, DeviceProfile, PolicyError, PrefillChunk, Status, parse_trace
from servesim.arrivals import Arrivals
from servesim.engine import check_batch
from servesim.prefixcache import PoolError
from servesim.state import EngineState

DEVICE = DeviceProfile(kv_pages=4, page_tokens=16, prefix_caching=True)
TRACE = parse_trace({"name": "exercise-31-11", "requests": [
    {"id": "r", "arrivalMs": 0, "inputTokens": 20, "outputTokens": 8,
     "prefix": [{"id": "sys", "tokens": 16}]},
    {"id": "s", "arrivalMs": 0, "inputTokens": 20, "outputTokens": 2,
     "prefix": [{"id": "sys", "tokens": 16}]},
    {"id": "t", "arrivalMs": 0, "inputTokens": 60, "outputTokens": 4},
]})  # fmt: skip


class Log:
    """The event log and the checks, printed as they happen."""

    def __init__(self):
        self.releases: dict[tuple[str, int, int], int] = {}
        self.failed = 0

    def event(self, text: str, ops=()) -> None:
        print(f"event: {text}")
        for op, rid, page, generation, refs in ops:
            print(f"    {op:<7} request {rid} page {page} generation {generation} -> refs {refs}")
            if op == "release":
                key = (rid, page, generation)
                self.releases[key] = self.releases.get(key, 0) + 1

    def check(self, ok: bool, claim: str) -> None:
        print(f"  check: {claim}: {'holds' if ok else 'FAILS'}")
        self.failed += not ok


def main(argv: list[str]) -> int:
    log = Log()
    state = EngineState(DEVICE, Arrivals(TRACE))
    pool = state.pool
    state.admit_due(0.0)
    r, s = state.live["r"], state.live["s"]

    step = Batch(prefill=[PrefillChunk("r", 20), PrefillChunk("s", 4, 16)])
    state.run_step(step, 0.0, 2.25)
    log.event("step 1: r prefills 20 tokens; s claims the 16 cached ones of page p", pool.log)
    p, p_generation = pool.tables["r"][0]
    log.check(pool.tables["s"][0] == (p, p_generation) and pool.page[p].refs == 2,
              f"page p = {p} is held once, with 2 references (r and s)")  # fmt: skip

    pool.log = []
    ended = state.terminate(r, Status.CANCELLED, 3.0)
    log.event("client cancels r at 3.0 ms", pool.log)
    log.check(ended and r.status is Status.CANCELLED, "r is terminal (cancelled)")
    log.check(pool.page[p].refs == 1, "p lost one reference and stays in use for s")

    pool.log = []
    again = state.terminate(r, Status.CANCELLED, 4.0)
    log.event("a second cancel of r at 4.0 ms", pool.log)
    log.check(not again and r.status_ms == 3.0, "nothing changes: r ended once, at 3.0 ms")

    state._preempt(r)  # a preemption's re-queue of r that arrives late
    log.event("a late preemption re-queue of r")
    log.check(r not in list(state.waiting.view()) and r.status is Status.CANCELLED,
              "r is not back in the waiting queue")  # fmt: skip

    try:
        check_batch(Batch(decode=["r", "s"]), state.view(4.0, None), who="a policy")
        refused = None
    except PolicyError as exc:
        refused = str(exc)
    log.event(f"a policy schedules r again: refused ({refused})")
    log.check(refused is not None, "no terminated request is scheduled")

    pool.log = []
    state.terminate(s, Status.COMPLETED, 25.0)
    log.event("s finishes at 25.0 ms", pool.log)
    log.check(pool.page[p].refs == 0 and p in pool.tail,
              "p is freed only now, with no reference left (kept for a later hit)")  # fmt: skip

    pool.log = []
    state.run_step(Batch(prefill=[PrefillChunk("t", 60)]), 25.0, 31.25)
    log.event("t prefills 60 tokens: it needs all 4 pages, so p is evicted and reused", pool.log)
    log.check(
        pool.page[p].generation > p_generation, f"p is in generation {pool.page[p].generation}"
    )

    try:
        pool.unref("r", p, p_generation)
        stale = None
    except PoolError as exc:
        stale = str(exc)
    log.event(f"a stale release of r's old entry (p, generation {p_generation}): refused ({stale})")
    log.check(stale is not None and pool.page[p].refs == 1, "t's page p keeps its reference")

    twice = [key for key, count in log.releases.items() if count > 1]
    log.check(
        not twice,
        f"every (request, page, generation) released at most once ({len(log.releases)} releases)",
    )
    print("all invariants hold" if not log.failed else f"{log.failed} invariant(s) FAILED")
    return 1 if log.failed else 0
