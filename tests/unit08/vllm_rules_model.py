"""A small model of vLLM V1's scheduler (0.33.0, FCFS, chunked prefill, no prefix cache,
watermark 0, ``scheduler_reserve_full_isl``) on unit 08's affine device, written from the rules
in the vLLM peer's README, not from ``servesim``. The differential test runs it beside the
engine with the reference ``paged``.

Its state is vLLM's: per request ``computed`` against ``num_tokens`` (prompt + emitted), the
blocks it holds, a ``running`` list in (re)admission order and a ``waiting`` deque.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field


@dataclass(eq=False)
class Req:
    id: str
    arrival: float
    prompt: int
    outputs: int
    times: list[float] = field(default_factory=list)
    computed: int = 0  # positions in the KV cache
    blocks: int = 0
    decoding: bool = False  # the last scheduled work completed a (re)prefill
    rejected: bool = False

    @property
    def num_tokens(self) -> int:
        return self.prompt + len(self.times)


@dataclass(frozen=True)
class Device:
    p: float = 0.1  # ms per prefill token
    d0: float = 20.0  # ms per decode round
    d1: float = 0.05  # ms per decoded sequence
    o: float = 0.25  # ms per step
    page: int = 16


def simulate(trace: list[dict], B: int, K: int | None, M: int | None, dev: Device = Device()):
    """Token times by request id, and counts of what happened (``Counter``):
    ``preemptions``, ``steps with several victims``, ``partial prefill victims``,
    ``requester victims``, ``K binding`` (a start refused by the cap), ``starts``."""
    pages = lambda n: math.ceil(n / dev.page)  # noqa: E731
    reqs = [Req(r["id"], r["arrivalMs"], r["inputTokens"], r["outputTokens"]) for r in trace]
    pending = deque(sorted(reqs, key=lambda r: r.arrival))  # stable: ties keep trace order
    waiting: deque[Req] = deque()
    running: list[Req] = []
    free = math.inf if M is None else M
    seen: Counter = Counter()
    now = 0.0
    while pending or waiting or running:
        while pending and pending[0].arrival <= now:
            r = pending.popleft()
            if M is not None and pages(r.prompt + r.outputs) > M:
                r.rejected = True
            else:
                waiting.append(r)
        if not waiting and not running:
            now = pending[0].arrival
            continue
        budget, scheduled, victims = B, {}, []
        i = 0
        while i < len(running) and budget > 0:  # rule 1: running first, in order
            r = running[i]
            n = min(r.num_tokens - r.computed, budget)
            need = pages(r.computed + n) - r.blocks  # rule 2
            while need > free:  # rule 3: lazy, LIFO
                v = running.pop()
                seen["partial prefill victims"] += not v.decoding
                seen["requester victims"] += v is r
                free += v.blocks
                v.blocks, v.computed, v.decoding = 0, 0, False  # rule 5
                waiting.appendleft(v)
                victims.append(v)
                if v is r:
                    break
            if r in victims:
                break
            free -= need
            r.blocks += need
            scheduled[r] = n
            budget -= n
            i += 1
        seen["preemptions"] += len(victims)
        seen["steps with several victims"] += len(victims) > 1
        while not victims and waiting and budget > 0:  # rules 4 and 6
            if K is not None and len(running) >= K:
                seen["K binding"] += 1
                break
            r = waiting[0]
            if pages(r.num_tokens) > free:
                break
            n = min(r.num_tokens, budget)
            waiting.popleft()
            running.append(r)
            r.blocks = pages(n)
            free -= r.blocks
            scheduled[r] = n
            budget -= n
            seen["starts"] += 1
        if not scheduled:
            raise RuntimeError(f"nothing scheduled at {now} ms")
        decodes = sum(r.decoding for r in scheduled)
        prefill = sum(n for r, n in scheduled.items() if not r.decoding)
        end = now + dev.o + dev.p * prefill + ((dev.d0 + dev.d1 * decodes) if decodes else 0.0)
        for r, n in scheduled.items():
            r.computed += n
            if r.computed == r.num_tokens:
                r.times.append(end)
                r.decoding = True
                if len(r.times) == r.outputs:
                    running.remove(r)
                    free += r.blocks
                    r.blocks = 0
        now = end
    return {r.id: r.times for r in reqs if not r.rejected}, seen
