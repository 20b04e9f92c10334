"""Unit 08's ``budgeted`` on the executor, in one loop: the planner and the step applied together.

``executor.execute`` with ``planners.budgeted`` makes every step in three calls (the planner,
its list of chunks, then applying them). Here the chunks are applied as they are chosen, on
local counters: the same decisions (the ``budgeted`` planner's), the same device arithmetic in
the same order, the same columns, in about two thirds of the time. ``tests/grader/
test_fastpath_budgeted.py`` requires every column equal to the planner's on the executor, and
``test_fastpath.py`` the timelines equal to the lab engine's.
"""

from __future__ import annotations

from .columns import zeros
from .executor import Steps, Unsupported, Workload


def execute(work: Workload, device, budget: int) -> Steps:
    """``executor.execute(work, device, planners.budgeted(work, device, budget), True)``."""
    if device.prefill_ms_per_context_token or device.decode_ms_per_context_token:
        raise Unsupported("per-context-token costs")
    total = len(work.order)
    out = Steps(first_step=zeros(total), first_decode=zeros(total))
    cap, pool = device.max_active, device.kv_pages
    order, arrival, prompt, output = work.order, work.arrival, work.prompt, work.output
    reserve = work.reserve
    add_chunk, first_step, first_decode = out.chunks.flat.extend, out.first_step, out.first_decode
    add_start, add_end, add_decode = out.starts.append, out.ends.append, out.decode_steps.append
    overhead, per_token = device.overhead_ms, device.prefill_ms_per_token
    batch_ms, per_seq = device.decode_batch_ms, device.decode_ms_per_seq
    leaving: dict[int, list[int]] = {}  # decode index -> [requests, pages] leaving after it
    clock = 0.0
    steps = decodes = arrived = 0  # len(out.ends), len(out.decode_steps), requests arrived
    running = head = head_done = reserved = 0  # ``executor.QueueState``'s counters
    while True:
        while arrived < total and arrival[arrived] <= clock:
            arrived += 1
        if head == arrived and not running:
            if arrived == total:
                return out
            clock = arrival[arrived]  # idle: next arrival
            out.idle.append([steps, clock])
            continue
        left = budget - running
        if left < 0:
            raise Unsupported("more running requests than the budget")
        decoded = running  # decode everyone, then FIFO chunks in the rest of the budget
        if decoded:
            add_decode(steps)
            decodes += 1
        holders, joined, freed = running + (1 if head_done else 0), 0, 0
        while left > 0 and head < arrived:
            pos, done = head, head_done
            if not done:  # a start: the active cap and the page pool allow it, or the fill stops
                if cap is not None and holders >= cap:
                    break
                if pool is not None and reserved + reserve[pos] > pool:
                    break
                holders, reserved = holders + 1, reserved + reserve[pos]
            need = prompt[pos] - done
            tokens = left if left < need else need
            left -= tokens
            req = order[pos]
            add_chunk((steps, req, done, tokens))
            if tokens < need:
                head_done = done + tokens
                continue
            head, head_done = pos + 1, 0
            first_step[req], first_decode[req] = steps, decodes  # decodes from the next on
            more = output[pos] - 1
            if not more:  # done now: its pages leave before the next step's decisions
                freed += reserve[pos]
                continue
            joined += 1
            gone = leaving.setdefault(decodes + more - 1, [0, 0])
            gone[0] += 1
            gone[1] += reserve[pos]
        tokens = budget - decoded - left
        if not decoded and not tokens:
            raise Unsupported("empty batch")
        busy = per_token * tokens  # ``executor.step_end``: the same operations in its order
        if decoded:
            busy += batch_ms + per_seq * decoded
        end = clock + overhead + busy
        add_start(clock)
        add_end(end)
        steps += 1
        running += joined
        reserved -= freed
        if decoded:
            gone = leaving.pop(decodes - 1, None)
            if gone is not None:
                running -= gone[0]
                reserved -= gone[1]
        clock = end
