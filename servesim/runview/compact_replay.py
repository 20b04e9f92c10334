"""A compact run entry (``servesim.compact``) read straight into ``Columns`` and lanes.

The requests' changes (arrivals, cancellations, moves, prefill chunks, finishes) are replayed one
by one in step order (each holder's pages ``rules.pages_for`` of its cached positions, as
``servesim.kvledger`` counts them); the decodes in between, which are most of a long run, only
as the pages they open and as the stays of requests in the decode set. Per-step columns are
then made by C-level passes (``itertools.accumulate``), and no request's token times are
listed: each lane's figures come from its rows (``_lanes``). ``tests/test_view.py`` holds the
result equal to ``columns.of_steps`` of the expanded run.
"""

from __future__ import annotations

import bisect
from itertools import accumulate, islice, repeat
from operator import sub

from .. import rules
from ..compact import step_starts
from ..kvledger import PageDevice
from .columns import LEFT, Columns, left_early

# the order of what happens to the requests within one step (model's replay order)
ARRIVE, CANCEL, PREEMPT, SWAP_OUT, SWAP_IN, CHUNK, FINISH = range(7)


def replay_compact(run: dict) -> tuple[Columns, list[tuple]]:
    """The columns of a compact entry, and each request's lane fields
    ``(id, arrival, status, end, ttft, max ITL, first token, last token, tokens)``."""
    device = PageDevice.of_run(run["device"])  # no prefix cache: compact runs have none
    page_tokens = device.page_tokens

    def pages_for(tokens: int) -> int:
        return rules.pages_for(device, tokens)

    req = run["requests"]
    ids, arrivals, outputs = req["id"], req["arrivalMs"], req["outputTokens"]
    total = len(ids)
    for name, column in req.items():
        if len(column) != total:
            raise ValueError(f"requests.{name} has {len(column)} entries, not {total}")
    status = req.get("status") or [None] * total
    status_ms = req.get("statusMs") or [None] * total
    ends, decode_steps = run["stepEndMs"], run["decodeSteps"]
    starts = step_starts(run)
    steps = len(ends)
    slices, resumes, chunks = run["slices"], run.get("resumes", ()), run["chunks"]
    cols = Columns(starts, ends, [], [], [])
    tokens = [0] * total  # each request's token count
    for n, _step, _first, count in slices:
        tokens[n] += 1 + count
    for n, _step, _first, count in resumes:
        tokens[n] += count

    # each time a request joined the running set (prefill done, or swapped in): its decodes
    entered = {(step, n): (first, count) for n, step, first, count in slices}
    resumed = {(step, n): (first, count) for n, step, first, count in resumes}
    events = []
    for n in range(total):
        if status[n] != "rejected":
            events.append((bisect.bisect_left(starts, arrivals[n]), ARRIVE, 0, n))
        if status[n] == "cancelled":
            events.append((bisect.bisect_left(starts, status_ms[n]), CANCEL, 0, n))
    last = _last_token_steps(run, tokens, outputs)
    events += [(step, FINISH, 0, n) for n, step in last.items()]
    for kind, table in ((PREEMPT, "preempts"), (SWAP_OUT, "swapOuts"), (SWAP_IN, "swapIns")):
        events += [(step, kind, k, n) for k, (step, n) in enumerate(run.get(table, ()))]
    events += [(row[0], CHUNK, k, row[1]) for k, row in enumerate(chunks)]
    events.sort()

    queue, pages = [0] * (steps + 1), [0] * (steps + 1)  # changes, at a step or after it
    opens: list[int] = []  # the decode steps where a running request opens a page
    state = [""] * total
    cache, host = [0] * total, [0] * total
    position: dict[tuple[int, int], int] = {}  # (step, request) -> its place among its kind

    def join(step: int, n: int, held: int, rows: dict) -> None:
        """Request ``n`` runs from ``step`` with ``held`` cached positions: each of its decodes
        adds a page when the last one was full."""
        first, count = rows[step, n]
        opens.extend(decode_steps[first + (-held) % page_tokens : first + count : page_tokens])
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
            pages[step + 1] -= pages_for(cache[n])
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
            _, _, start, count = chunks[k]
            held = start + count
            batch = cols.prefill.setdefault(step, [])
            position[step, n] = len(batch)
            batch.append((ids[n], start, count))
        pages[step] += pages_for(held) - pages_for(cache[n])
        cache[n] = held
        if kind == SWAP_IN:
            join(step, n, held, resumed)
        elif kind == CHUNK and (step, n) in entered:
            cols.firsts.setdefault(step, []).append(ids[n])
            if state[n] == "wait":
                queue[step + 1] -= 1
            state[n] = "run"
            join(step, n, held, entered)
    for step in opens:
        pages[step] += 1
    del pages[steps:], queue[steps:]
    cols.queue = list(accumulate(queue))
    cols.kv_pages = list(accumulate(pages))
    cols.known.update(queue=queue, kv_pages=pages, idle=[n for n, _ in run["idleStarts"]])
    _decode_sets(cols, run, ids, position)
    left = [(status_ms[n], ids[n], status[n]) for n in range(total) if status[n] in LEFT]
    left_early(left, ends, cols)
    return cols, _lanes(run, status, status_ms, tokens)


def _last_token_steps(run: dict, tokens: list[int], outputs: list[int]) -> dict:
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
    return {n: step for n, step in last.items() if tokens[n] == outputs[n]}


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
    steps = len(cols.end_ms)
    change = [0] * steps  # the decode set's size, as changes at the decode steps
    for first, end, _, _ in stays:
        change[decode_steps[first]] += 1
        if end < len(decode_steps):
            change[decode_steps[end]] -= 1
    decodes = list(accumulate(change))
    for begin, end in _gaps(decode_steps, steps):  # steps that decode nothing
        before = decodes[begin - 1] if begin else 0  # what the set holds through the gap
        change[begin] -= before
        if end < steps:
            change[end] += before
        decodes[begin:end] = repeat(0, end - begin)
    cols.decodes = decodes
    cols.known["decodes"] = change
    stays.sort(key=lambda stay: (stay[0], stay[2]))  # by when they joined
    for first, _, _, n in stays:
        cols.enter.setdefault(decode_steps[first], []).append(ids[n])
    for _, end, _, n in sorted(stays, key=lambda stay: stay[1]):  # stable: joining order
        if end < len(decode_steps):
            cols.leave.setdefault(decode_steps[end], []).append(ids[n])


def _gaps(at: list[int], total: int) -> list[tuple[int, int]]:
    """The ranges ``[begin, end)`` of ``range(total)`` missing from ``at`` (increasing), found
    by halving: a stretch of ``at`` whose ends are as far apart as its length has no gap, so
    the cost is the number of gaps times a logarithm, not the number of steps."""
    if not at:
        return [(0, total)] if total else []
    found = [(0, at[0])] if at[0] else []
    pending = [(0, len(at) - 1)]  # index ranges of ``at`` that may hold a gap
    inner = []
    while pending:
        i, j = pending.pop()
        if at[j] - at[i] == j - i:
            continue
        if j - i == 1:
            inner.append((at[i] + 1, at[j]))
            continue
        mid = (i + j) // 2
        pending += [(i, mid), (mid, j)]
    found += sorted(inner)
    if at[-1] + 1 < total:
        found.append((at[-1] + 1, total))
    return found


def _lanes(run: dict, status: list, status_ms: list, tokens: list[int]) -> list[tuple]:
    """Each request's lane fields, with the metrics ``compact.expand_run`` gives it, computed
    from its rows: the largest gap between two tokens is the largest of each row's own (the
    gaps between consecutive decode steps, over the row's range) and of the gaps between rows.
    """
    req = run["requests"]
    ends, decode_steps = run["stepEndMs"], run["decodeSteps"]
    at = list(map(ends.__getitem__, decode_steps))  # each decode step's end
    gaps = list(map(sub, islice(at, 1, None), at))  # gaps[i]: decode step i to i + 1
    del at
    rows: list[list[tuple]] = [[] for _ in req["id"]]  # (first token, last token, widest gap)
    for n, step, first, count in run["slices"]:
        begin = end = ends[step]
        widest = None
        if count:
            end = ends[decode_steps[first + count - 1]]
            widest = max(gaps[first : first + count - 1], default=None)
            into = ends[decode_steps[first]] - begin  # the prefill's token to the first decode
            widest = into if widest is None else max(into, widest)
        rows[n].append((begin, end, widest, step))
    for n, step, first, count in run.get("resumes", ()):
        if count:
            widest = max(gaps[first : first + count - 1], default=None)
            begin, end = ends[decode_steps[first]], ends[decode_steps[first + count - 1]]
            rows[n].append((begin, end, widest, step))
    lanes = []
    for n, (rid, arrival, outputs) in enumerate(
        zip(req["id"], req["arrivalMs"], req["outputTokens"])
    ):
        own = rows[n]
        if len(own) > 1:
            own.sort(key=lambda row: row[3])
        count = tokens[n]
        first = own[0][0] if own else None
        last = own[-1][1] if own else None
        shown = status[n] or ("completed" if count == outputs else "unfinished")
        end = status_ms[n] if status_ms[n] is not None else last
        ttft = max_itl = None
        if (status[n] or "completed") == "completed" and own:
            ttft = first - arrival
            if count > 1:
                widths = [row[2] for row in own if row[2] is not None]
                widths += [b[0] - a[1] for a, b in zip(own, own[1:])]
                max_itl = max(widths)
        lanes.append((rid, arrival, shown, end, ttft, max_itl, first, last, count))
    return lanes
