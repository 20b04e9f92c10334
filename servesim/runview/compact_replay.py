"""A compact run entry (``servesim.compact``) read straight into ``Columns`` and lanes.

The requests' changes (arrivals, cancellations, moves, prefill chunks, finishes) are replayed one
by one in step order; the decodes in between, which are most of a long run, only as the pages
they open. ``tests/test_view.py`` holds the result equal to ``columns.of_steps`` of the expanded
run.
"""

from __future__ import annotations

import bisect
from itertools import accumulate, compress, repeat
from operator import add, ne, sub

from ..compact import step_starts, token_times
from .columns import LEFT, Columns, left_early

# the order of what happens to the requests within one step (model's replay order)
ARRIVE, CANCEL, PREEMPT, SWAP_OUT, SWAP_IN, CHUNK, FINISH = range(7)


def replay_compact(run: dict) -> tuple[Columns, list[tuple]]:
    """The columns of a compact entry, and each request's lane fields
    ``(id, arrival, status, end, token times, ttft, max ITL)``.

    The requests' changes (arrivals, cancellations, moves, prefill chunks, finishes) are
    replayed one by one in step order; the decodes in between, which are most of a long run,
    only as the pages they open, computed for each stretch a request spends running."""
    page_tokens = run["device"].get("pageTokens") or 16
    req = run["requests"]
    ids, arrivals, outputs = req["id"], req["arrivalMs"], req["outputTokens"]
    total = len(ids)
    for name, column in req.items():
        if len(column) != total:
            raise ValueError(f"requests.{name} has {len(column)} entries, not {total}")
    status = req.get("status") or [None] * total
    status_ms = req.get("statusMs") or [None] * total
    ends, starts, decode_steps = run["stepEndMs"], step_starts(run), run["decodeSteps"]
    steps = len(ends)
    slices, resumes, chunks = run["slices"], run.get("resumes", ()), run["chunks"]
    cols = Columns(starts, ends, [], [], [0] * steps)
    times = token_times(run)

    # each time a request joined the running set (prefill done, or swapped in): its decodes
    entered = {(step, n): (first, count) for n, step, first, count in slices}
    resumed = {(step, n): (first, count) for n, step, first, count in resumes}
    events = []
    for n in range(total):
        if status[n] != "rejected":
            events.append((bisect.bisect_left(starts, arrivals[n]), ARRIVE, 0, n))
        if status[n] == "cancelled":
            events.append((bisect.bisect_left(starts, status_ms[n]), CANCEL, 0, n))
    events += [(step, FINISH, 0, n) for n, step in _last_token_steps(run, times, outputs).items()]
    for kind, table in ((PREEMPT, "preempts"), (SWAP_OUT, "swapOuts"), (SWAP_IN, "swapIns")):
        events += [(step, kind, k, n) for k, (step, n) in enumerate(run.get(table, ()))]
    events += [(row[0], CHUNK, k, row[1]) for k, row in enumerate(chunks)]
    events.sort()

    queue, pages = [0] * (steps + 1), [0] * (steps + 1)  # changes, at a step or after it
    state = [""] * total
    cache, host = [0] * total, [0] * total
    position: dict[tuple[int, int], int] = {}  # (step, request) -> its place among its kind

    def join(step: int, n: int, held: int, rows: dict) -> None:
        """Request ``n`` runs from ``step`` with ``held`` cached positions: each of its decodes
        adds a page when the last one was full."""
        first, count = rows[step, n]
        for j in range((-held) % page_tokens, count, page_tokens):
            pages[decode_steps[first + j]] += 1
        cache[n] = held + count  # what it holds when it next changes

    for step, kind, k, n in events:
        if step >= steps:
            continue
        if kind == ARRIVE:
            state[n] = "wait"
            queue[step] += 1
            continue
        if kind == FINISH:  # after the step's pages are counted
            state[n] = "done"
            pages[step + 1] += cache[n] // -page_tokens
            cache[n] = 0
            continue
        if kind == CANCEL:
            if state[n] == "wait":
                queue[step] -= 1
            state[n], held = "done", 0
        elif kind == PREEMPT:
            if state[n] != "wait":
                queue[step + 1] += 1
            state[n], held = "wait", 0
            cols.preempt.setdefault(step, []).append(ids[n])
        elif kind == SWAP_OUT:
            state[n], host[n], held = "swap", cache[n], 0
            cols.swap_out.setdefault(step, []).append(ids[n])
        elif kind == SWAP_IN:
            state[n], held = "run", host[n]
            moved = cols.swap_in.setdefault(step, [])
            position[step, n] = len(moved)
            moved.append(ids[n])
        else:  # CHUNK
            _, _, start, tokens = chunks[k]
            held = start + tokens
            batch = cols.prefill.setdefault(step, [])
            position[step, n] = len(batch)
            batch.append((ids[n], start, tokens))
        pages[step] += -(-held // page_tokens) + (cache[n] // -page_tokens)
        cache[n] = held
        if kind == SWAP_IN:
            join(step, n, held, resumed)
        elif kind == CHUNK and (step, n) in entered:
            cols.firsts.setdefault(step, []).append(ids[n])
            if state[n] == "wait":
                queue[step + 1] -= 1
            state[n] = "run"
            join(step, n, held, entered)
    cols.queue = list(accumulate(queue[:steps]))
    cols.kv_pages = list(accumulate(pages[:steps]))
    _decode_sets(cols, run, ids, position)
    left = [(status_ms[n], ids[n], status[n]) for n in range(total) if status[n] in LEFT]
    left_early(left, ends, cols)
    return cols, _lanes(req, status, status_ms, times)


def _last_token_steps(run: dict, times: list[list[float]], outputs: list[int]) -> dict:
    """The step of each finished request's last token (request index -> step)."""
    decode_steps = run["decodeSteps"]
    last: dict[int, int] = {}
    for n, step, first, count in run["slices"]:
        end = decode_steps[first + count - 1] if count else step
        last[n] = max(last.get(n, end), end)
    for n, _step, first, count in run.get("resumes", ()):
        if count:
            end = decode_steps[first + count - 1]
            last[n] = max(last.get(n, end), end)
    return {n: step for n, step in last.items() if len(times[n]) == outputs[n]}


def _decode_sets(cols: Columns, run: dict, ids: list[str], position: dict) -> None:
    """Each step's decode count, and the requests entering and leaving the decode set.

    A request decodes over a range of decode steps from each time it joins the running set;
    ranges of one request back to back are one stay. Within a step, the requests decode in the
    order they joined (``servesim.compact``): the joining step, swap-ins before prefills, the
    place in the batch."""
    decode_steps = run["decodeSteps"]
    rows = [
        (n, first, count, (step, 1, position[step, n]))
        for n, step, first, count in run["slices"]
        if count
    ]
    rows += [
        (n, first, count, (step, 0, position[step, n]))
        for n, step, first, count in run.get("resumes", ())
        if count
    ]
    rows.sort()
    stays: list[list] = []  # [from, to (decode indices), joined, request]
    for n, first, count, joined in rows:
        if stays and stays[-1][3] == n and stays[-1][1] == first:
            stays[-1][1] = first + count
        else:
            stays.append([first, first + count, joined, n])
    change = [0] * (len(decode_steps) + 1)
    for first, end, _, _ in stays:
        change[first] += 1
        change[end] -= 1
    cols.decodes = _spread(list(accumulate(change))[:-1], decode_steps, len(cols))
    stays.sort(key=lambda stay: (stay[0], stay[2]))  # by when they joined
    for first, _, _, n in stays:
        cols.enter.setdefault(decode_steps[first], []).append(ids[n])
    for _, end, _, n in sorted(stays, key=lambda stay: stay[1]):  # stable: joining order
        if end < len(decode_steps):
            cols.leave.setdefault(decode_steps[end], []).append(ids[n])


def _spread(values: list[int], at: list[int], total: int) -> list[int]:
    """A column of ``total`` steps holding ``values[i]`` at step ``at[i]`` (``at`` increasing)
    and 0 elsewhere, built a stretch of consecutive steps at a time."""
    if not at:
        return [0] * total
    out = [0] * at[0]
    jumps = compress(range(1, len(at)), map(ne, at[1:], map(add, at, repeat(1))))
    begin = 0
    for i in jumps:  # at[i] does not follow at[i - 1]
        out += values[begin:i]
        out += [0] * (at[i] - at[i - 1] - 1)
        begin = i
    out += values[begin:]
    out += [0] * (total - 1 - at[-1])
    return out


def _lanes(req: dict, status: list, status_ms: list, times: list[list[float]]) -> list[tuple]:
    """Each request's lane fields, with the metrics ``compact.expand_run`` gives it."""
    lanes = []
    for n, (rid, arrival, outputs) in enumerate(
        zip(req["id"], req["arrivalMs"], req["outputTokens"])
    ):
        own = times[n]
        shown = status[n] or ("completed" if len(own) == outputs else "unfinished")
        end = status_ms[n] if status_ms[n] is not None else (own[-1] if own else None)
        ttft = max_itl = None
        if (status[n] or "completed") == "completed" and own:
            ttft = own[0] - arrival
            max_itl = max(map(sub, own[1:], own)) if len(own) > 1 else None
        lanes.append((rid, arrival, shown, end, own, ttft, max_itl))
    return lanes
