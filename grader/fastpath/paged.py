"""Unit 08's ``paged`` (vLLM V1's scheduler) at batch level: preemptions are slices.

The reference ``paged`` walks every holder of KV each step and asks, request by request, for the
pages of its tokens. Here the same decisions come from counters. A running request needs a new
page exactly when its cache fills its last page, and its cache grows by one position per decode
step, so which decode steps make it ask is fixed when it enters the running set: every
``pageTokens``-th one, from an offset. ``due[r]`` counts the running requests that ask at the
decode steps ``k`` with ``k % pageTokens == r``; a step's decode pages are ``due[k % pageTokens]``,
whatever the number of running requests. Only a step whose pages do not fit walks the holders
one by one (as the reference does: lazy LIFO preemption, ``running.pop()``, the requester itself
possibly the victim), so its cost is in proportion to the holders on preemption steps alone.

A request's tokens are one *slice* per entry into the running set (``servesim.compact``): a
victim's slice ends at the last decode step it took part in, and its recompute opens the next.
The rules followed (vLLM 0.33.0, with the source lines) are in the peers' vLLM README and in the
reference's docstring; the differential tests (``tests/grader/test_fastpath_paged.py``) require
every token time and event to equal the lab engine's.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import fields

import numpy as np

from .columns import Table, floats, ints, view, zeros
from .executor import Steps, Unsupported, Workload, step_end, step_work

# device fields this executor models; any other at a value other than its default is declined
MODELLED = {"prefill_ms_per_token", "decode_batch_ms", "decode_ms_per_seq", "overhead_ms"}
MODELLED |= {"max_active", "kv_pages", "page_tokens"}


def check_device(device) -> None:
    """Raise ``Unsupported`` for a device knob this executor does not model."""
    for spec in fields(device):
        if spec.name not in MODELLED and getattr(device, spec.name) != spec.default:
            raise Unsupported(f"device field {spec.name}")


def execute(work: Workload, device, budget: int) -> Steps:
    """Run ``paged`` with token budget ``budget`` over ``work`` on ``device`` until all is done.

    The result carries the compact tables itself (``slices``, ``preempts``, the recompute
    columns), in trace order.
    """
    check_device(device)
    page, pool, cap = device.page_tokens, device.kv_pages, device.max_active
    overhead = device.overhead_ms
    count = len(work.order)
    out = Steps(preempts=[], recomputes=zeros(count), recomputed_tokens=zeros(count))
    order, arrival, prompt, output = work.order, work.arrival, work.prompt, work.output
    if pool is not None:
        # a request whose pages could never fit is rejected at arrival and takes no part in
        # any step
        admitted = view(work.reserve) <= pool
        if not admitted.any():
            raise Unsupported("every request is rejected")
        if not admitted.all():
            out.completed = np.ones(count, dtype=bool)
            out.completed[view(order)[~admitted]] = False
            order, prompt, output = (ints(view(c)[admitted]) for c in (order, prompt, output))
            arrival = floats(view(arrival)[admitted])
    total = len(order)
    # by queue position: the prefill target (prompt + tokens emitted before it), tokens emitted
    # by closed slices, the partial prefill's progress; a running request's first decode index,
    # its cache when it entered the running set, its last decode index, and its open slice
    target, emitted, prefilled = ints(prompt), zeros(total), zeros(total)
    entry, base, last, open_slice = zeros(total), zeros(total), zeros(total), zeros(total)
    slices = Table(4)  # in time order
    holders: dict[int, None] = {}  # hold KV, in (re)admission order: vLLM's ``running``
    victims: deque[int] = deque()  # preempted and waiting, newest first (the queue's front)
    leaving: dict[int, list[int]] = {}  # decode index -> running requests it is the last of
    leave_at: list[int] = []  # heap of leaving's keys (some already gone)
    due = [0] * page  # running requests that ask for a page at decode steps k, by k % page
    free = pool if pool is not None else float("inf")  # pages nobody holds
    running = arrived = head = 0
    partial = None  # the holder part-way through its prefill (the last holder, if any)
    clock = 0.0

    def pages(tokens: int) -> int:
        return -(-tokens // page)

    def cached(q: int, k: int) -> int:  # q's cache before decode step k
        return prefilled[q] if q == partial else base[q] + k - entry[q]

    def preempt(q: int, step: int, k: int) -> int:
        """Preempt ``q`` at the start of ``step`` (decode index ``k``); the pages it frees."""
        nonlocal running, partial
        drop, n = cached(q, k), order[q]
        if q == partial:
            partial, prefilled[q] = None, 0
        else:  # its slice ends with the previous decode step
            decodes = k - entry[q]
            slices.set(open_slice[q], 3, decodes)
            emitted[q] += 1 + decodes
            target[q] = prompt[q] + emitted[q]
            leaving[last[q]].remove(q)
            due[(entry[q] - base[q]) % page] -= 1
            running -= 1
        del holders[q]
        victims.appendleft(q)
        out.preempts.append([step, n])
        out.recomputes[n] += 1
        out.recomputed_tokens[n] += drop
        return pages(drop)

    while True:
        while arrived < total and arrival[arrived] <= clock:
            arrived += 1
        if not holders and not victims and head == arrived:
            if arrived == total:
                break
            clock = arrival[arrived]  # idle until the next arrival
            out.idle.append([len(out.ends), clock])
            continue
        step, k = len(out.ends), len(out.decode_steps)
        left = budget - running  # >= 0: a request joins the running set within the budget
        if partial is None and running:  # decode-only steps while nothing can change
            q = victims[0] if victims else head if head < arrived else None
            stuck = left <= 0 or (cap is not None and len(holders) >= cap)
            if q is not None and not stuck:
                stuck = pages(target[q]) > free  # and free only shrinks until someone leaves
            if stuck or q is None:
                while leave_at and leave_at[0] < k:
                    heapq.heappop(leave_at)
                stop = leave_at[0] if leave_at else k  # that step's leavers: the full path
                # with an empty queue and room to start, an arrival ends the run of steps
                horizon = arrival[arrived] if not stuck and arrived < total else float("inf")
                work, ran = step_work(device, running, 0), k
                while k < stop and clock < horizon and due[k % page] <= free:
                    free -= due[k % page]
                    end = clock + overhead + work
                    out.starts.append(clock)
                    out.ends.append(end)
                    out.decode_steps.append(step)
                    clock, step, k = end, step + 1, k + 1
                if k > ran:
                    continue
        chunks: list[tuple[int, int, int]] = []  # (position, from token, tokens)
        prefill = 0  # their tokens
        victims_before = len(out.preempts)
        need = due[k % page] if running else 0
        if need <= free:  # every decode gets its page; only the partial prefill may not fit
            free -= need
            decoded = running
            if partial is not None and left > 0:
                done = prefilled[partial]
                tokens = min(target[partial] - done, left)
                grow = pages(done + tokens) - pages(done)
                if grow > free:  # the last holder asks: it is its own victim
                    free += preempt(partial, step, k)
                else:
                    free -= grow
                    left -= tokens
                    prefill += tokens
                    chunks.append((partial, done, tokens))
        else:  # the reference's walk, holder by holder, popping victims off the end
            walk, left, decoded, i = list(holders), budget, 0, 0
            while i < len(walk) and left > 0:
                q = walk[i]
                have = cached(q, k)
                tokens = min(target[q] - have, left) if q == partial else 1
                grow = pages(have + tokens) - pages(have)
                while grow > free and walk[-1] != q:
                    free += preempt(walk.pop(), step, k)
                if grow > free:
                    free += preempt(walk.pop(), step, k)
                    break
                free -= grow
                left -= tokens
                if q == partial:
                    prefill += tokens
                    chunks.append((q, have, tokens))
                else:
                    decoded += 1
                i += 1
        if len(out.preempts) == victims_before:  # a step that preempted starts nobody
            active = len(holders)
            while left > 0 and (cap is None or active < cap):
                if victims:
                    q = victims[0]
                elif head < arrived:
                    q = head
                else:
                    break
                if pages(target[q]) > free:
                    break
                if victims:
                    victims.popleft()
                else:
                    head += 1
                tokens = min(target[q], left)
                free -= pages(tokens)
                left -= tokens
                prefill += tokens
                active += 1
                holders[q] = None
                chunks.append((q, 0, tokens))
        if not decoded and not chunks:
            raise Unsupported("empty batch")
        end = step_end(device, clock, decoded, prefill)
        out.starts.append(clock)
        out.ends.append(end)
        if decoded:
            out.decode_steps.append(step)
        first = len(out.decode_steps)  # the next decode step's index
        done_now = []  # completed by their prefill: the cache goes at the end of the step
        for q, done, tokens in chunks:
            n = order[q]
            out.chunks.add(step, n, done, tokens)
            if done + tokens < target[q]:
                prefilled[q], partial = done + tokens, q
                continue
            if q == partial:
                partial = None
            prefilled[q] = 0
            decodes = output[q] - emitted[q] - 1  # still to come
            open_slice[q] = len(slices)
            slices.add(n, step, first, decodes)
            if not decodes:
                done_now.append(q)
                continue
            running += 1
            entry[q], base[q], last[q] = first, target[q], first + decodes - 1
            due[(first - target[q]) % page] += 1
            if last[q] not in leaving:
                leaving[last[q]] = []
                heapq.heappush(leave_at, last[q])
            leaving[last[q]].append(q)
        for q in leaving.pop(k, ()) if decoded else ():
            del holders[q]
            free += pages(base[q] + k + 1 - entry[q])
            due[(entry[q] - base[q]) % page] -= 1
            running -= 1
        for q in done_now:
            del holders[q]
            free += pages(target[q])
        clock = end
    rows = np.asarray(slices)
    out.slices = Table.of(rows[np.argsort(rows[:, 0], kind="stable")])  # by request
    return out
