"""A compact run entry (``servesim.compact``) drawn by driving the state machine with its
recorded decisions (``recorded.Recorded``), without listing its steps.

The compact tables name every step's batch: its chunks, preemptions and swaps, and its decode
set, which changes only where a request joins it (a prefill that ended, a swap-in) or leaves
it (its last token, a preemption, a swap-out): ``_DecodeSets``. A step with a chunk or a move,
or that starts after an idle gap, runs alone (``Recorded.step``, after the decision points of
the gap before it, as the full entry's reader runs every step); the decode steps between two
such steps repeat one batch until the decode set changes and run as stretches
(``Recorded.stretch``: as many steps at once as the rules allow, ``servesim.stretch``). Each
step's queue, pages and firsts are the state's, as for a full entry (``model``); the lanes'
figures are the metrics of the state's token times (``metrics``). ``tests/test_view.py``
holds the picture equal to the expanded entry's (which ``tests/test_view_pages.py`` holds to
the engine's).
"""

from __future__ import annotations

from itertools import accumulate
from operator import le, lt

from ..batch import Batch, PrefillChunk
from ..compact import request_records, step_starts
from ..metrics import ttft_and_max_itl
from .columns import LEFT, Columns, decode_change, left_early
from .driving import firsts, lane_fields, recorded

MOVES = ("preempts", "swapOuts", "swapIns")  # the compact tables of a batch's moves
_NONE = ((), (), ())


def replay_compact(run: dict) -> tuple[Columns, list[tuple]]:
    """The columns of a compact entry, and each request's lane fields (``model.Lane``)."""
    records = request_records(run)  # refuses columns of unequal lengths
    ids = run["requests"]["id"]
    driven = recorded(run["device"], records)
    ends, decode_steps = run["stepEndMs"], run["decodeSteps"]
    if not all(map(le, ends, ends[1:])) or not all(map(lt, decode_steps, decode_steps[1:])):
        raise ValueError("stepEndMs must not decrease, and decodeSteps must increase")
    starts, steps = step_starts(run), len(ends)
    cols = Columns(starts, ends, [], [], [])
    chunks: dict[int, list] = {}
    for step, n, start, tokens in run["chunks"]:
        chunks.setdefault(step, []).append((ids[n], start, tokens))
    moves: dict[int, tuple[list, list, list]] = {}  # step -> its preempts, swap-outs, swap-ins
    for k, table in enumerate(MOVES):
        for step, n in run.get(table, ()):
            moves.setdefault(step, ([], [], []))[k].append(ids[n])
    sets = _DecodeSets(run, ids)
    idle = [step for step, _ in run["idleStarts"]]
    alone = {*chunks, *idle, *moves}  # the steps that run alone: a chunk, a move, an idle start
    changed = set(sets.changed_steps())  # a new decode set: where a stretch begins
    if any(step >= steps for step in alone) or (decode_steps and decode_steps[-1] >= steps):
        raise ValueError("a table names a step past stepEndMs")
    state, seqs = driven.state, driven.seqs
    queue, pages, decodes = [0] * steps, [0] * steps, [0] * steps  # changes, step by step
    last = [0, 0, 0]  # the queue, pages and decode count drawn last
    previous: list[str] = []  # the last decode set that was not empty, as the page keeps it

    def draw(at: int, batch: Batch, waiting: int, page_count: int) -> None:
        """Step ``at`` runs ``batch`` with ``waiting`` queued; ``page_count`` pages after it."""
        nonlocal previous
        count = len(batch.decode)
        queue[at] += waiting - last[0]
        pages[at] += page_count - last[1]
        decodes[at] += count - last[2]
        last[:] = waiting, page_count, count
        if batch.decode and list(batch.decode) != previous:
            gone, new, previous = decode_change(previous, batch.decode)
            if gone:
                cols.leave[at] = gone
            if new:
                cols.enter[at] = new

    def single(at: int, decode: tuple, prev_end: float) -> None:
        """Step ``at`` alone, after the decision points of the gap before it."""
        prefill = chunks.get(at, ())
        moved = moves.get(at, _NONE)
        batch = Batch(
            decode,
            tuple(PrefillChunk(rid, tokens) for rid, _, tokens in prefill),
            *map(tuple, moved),
        )
        driven.gap(prev_end, starts[at])
        driven.reach(prev_end, starts[at])
        waiting = len(state.waiting)
        refused = driven.step(batch, starts[at], ends[at])
        if refused is not None:
            raise ValueError(f"step {at}: the rules refuse its batch ({refused[1]})")
        draw(at, batch, waiting, state.step_pages)
        if prefill:
            cols.prefill[at] = list(prefill)
            if got := firsts(prefill, seqs, ends[at]):
                cols.firsts[at] = got
        for ids_moved, table in zip(moved, (cols.preempt, cols.swap_out, cols.swap_in)):
            if ids_moved:
                table[at] = ids_moved

    def stretches(begin: int, stop: int, batch: Batch) -> None:
        """The plain decode steps ``begin`` .. ``stop - 1``, each running ``batch``."""
        at = begin
        while at < stop:
            waiting, base = len(state.waiting), state.tally.pages
            got = driven.stretch(batch, starts[at], ends, at, stop)
            if got.refused is not None:
                raise ValueError(f"step {at}: the rules refuse its batch ({got.refused[1]})")
            if got.opens is None:
                draw(at, batch, waiting, state.step_pages)
            else:
                draw(at, batch, waiting, base)
                for step in got.opens:
                    pages[at + step - 1] += 1
                last[1] += len(got.opens)
            at += got.steps

    driven.fire(0.0, (0.0, 0.0))
    s, d = 0, 0  # the next step; the index of the next decode step
    for mark in [*sorted(alone | changed), steps]:
        plain = mark - s  # the plain decode steps s .. mark - 1 repeat one batch
        if plain and d + plain <= len(decode_steps) and decode_steps[d + plain - 1] == mark - 1:
            stretches(s, mark, Batch(sets.at(d), ()))
            s, d = mark, d + plain
        # what is left before the mark (a step that neither decodes nor prefills), and the
        # mark itself where it runs alone
        while s < mark or (s == mark < steps and mark in alone):
            decodes_here = d < len(decode_steps) and decode_steps[d] == s
            single(s, sets.at(d) if decodes_here else (), ends[s - 1] if s else 0.0)
            d += decodes_here
            s += 1
    cols.queue, cols.kv_pages = list(accumulate(queue)), list(accumulate(pages))
    cols.decodes = list(accumulate(decodes))
    cols.known.update(queue=queue, kv_pages=pages, decodes=decodes, idle=idle)
    left = [(r["statusMs"], r["id"], r["status"]) for r in records if r.get("status") in LEFT]
    left_early(left, ends, cols)
    lanes = []
    for record in records:
        times = record["tokenTimesMs"] = seqs[record["id"]].token_times_ms
        if record.get("status", "completed") == "completed":  # as ``compact.with_tokens``
            record["ttftMs"], record["maxItlMs"] = ttft_and_max_itl(record["arrivalMs"], times)
        lanes.append(lane_fields(record))
    return cols, lanes


class _DecodeSets:
    """Each decode step's decode set, from the rows of ``slices`` and ``resumes``: a request
    decodes from the row's ``decodeIndex`` for ``count`` decode steps, and a decode batch
    lists its members in the order they joined (the joining step; its swap-ins before its
    chunks; their places in the batch: ``servesim.compact``)."""

    def __init__(self, run: dict, ids: list[str]):
        self.ids = ids
        place = {}  # (step, request) -> its place among the step's chunks, or swap-ins
        for table in ("chunks", "swapIns"):
            taken: dict[int, int] = {}
            for row in run.get(table, ()):
                step, n = row[0], row[1]
                place[table, step, n] = taken[step] = taken.get(step, -1) + 1
        self.joins: dict[int, list] = {}
        self.leaves: dict[int, list[int]] = {}
        for table, kind in (("resumes", 0), ("slices", 1)):
            source = "swapIns" if kind == 0 else "chunks"
            for n, step, first, count in run.get(table, ()):
                if count:
                    key = (step, kind, place[source, step, n])
                    self.joins.setdefault(first, []).append((key, n))
                    self.leaves.setdefault(first + count, []).append(n)
        self.decode_steps = run["decodeSteps"]
        self.changes = sorted({*self.joins, *self.leaves})  # the decode indices where it changes
        self.next = 0  # the first of ``changes`` not applied yet
        self.members: dict[int, None] = {}  # the current set, in joining order
        self.current: tuple[str, ...] = ()

    def changed_steps(self) -> list[int]:
        """The decode steps whose set differs from the decode step before."""
        total = len(self.decode_steps)
        return [self.decode_steps[i] for i in self.changes if i < total]

    def at(self, index: int) -> tuple[str, ...]:
        """The decode set of decode step ``index`` (asked in increasing order)."""
        changes, members = self.changes, self.members
        if self.next < len(changes) and changes[self.next] <= index:
            while self.next < len(changes) and changes[self.next] <= index:
                change = changes[self.next]
                self.next += 1
                for n in self.leaves.get(change, ()):
                    del members[n]
                for _, n in sorted(self.joins.get(change, ())):
                    members[n] = None
            self.current = tuple(self.ids[n] for n in members)
        return self.current
