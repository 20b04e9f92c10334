"""An independent, batch-level model of the Vidur peer job's schedule, to cross-check the lab.

Sarathi-style steps: decode every running sequence (one token each, counted against the budget),
then fill the rest of the budget with prefill chunks in FIFO order; a request that has not
started joins only while fewer than ``cap`` sequences hold KV; no page pool. A step costs
``overhead + prefill_ms * prefill tokens + (decode_ms + per_seq_ms * n if n)``. It shares no code
with servesim: it keeps counters, not Sequence objects.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Schedule:
    steps: int
    last_token_ms: float
    decode_slots: int
    prefill_tokens: int


def sarathi_schedule(
    requests, budget=512, cap=128, overhead=0.25, prefill_ms=0.1, decode_ms=20.0, per_seq_ms=0.05
) -> Schedule:
    """``requests``: (arrival ms, prompt tokens, output tokens), sorted by arrival."""
    pending = deque(requests)
    waiting: deque[list] = deque()  # [prompt tokens left, outputs, started]
    running: list[int] = []  # outputs still to emit
    clock, steps, slots, prefilled, last = 0.0, 0, 0, 0, 0.0
    holders = 0
    while pending or waiting or running:
        while pending and pending[0][0] <= clock:
            _, prompt, out = pending.popleft()
            waiting.append([prompt, out, False])
        if not waiting and not running:
            clock = pending[0][0]
            continue
        n, left, chunk_tokens, finished_prefill = len(running), budget - len(running), 0, []
        for item in waiting:
            if left <= 0:
                break
            if not item[2]:
                if holders >= cap:
                    break
                item[2], holders = True, holders + 1
            take = min(left, item[0])
            item[0] -= take
            left -= take
            chunk_tokens += take
            if item[0] == 0:
                finished_prefill.append(item)
        clock += overhead + prefill_ms * chunk_tokens + (decode_ms + per_seq_ms * n if n else 0)
        steps, slots, prefilled = steps + 1, slots + n, prefilled + chunk_tokens
        running = [out - 1 for out in running]
        for item in finished_prefill:
            waiting.remove(item)
            running.append(item[1] - 1)  # the first token comes with the last prefill chunk
        if n or finished_prefill:
            last = clock
        done = sum(1 for out in running if out == 0)
        running = [out for out in running if out > 0]
        holders -= done
    return Schedule(steps, last, slots, prefilled)
