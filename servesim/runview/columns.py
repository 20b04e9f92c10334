"""A replayed run as columns: one list per quantity with a value at every step, and one dict per
thing only some steps have (step index -> its list), so that drawing a run of millions of steps
costs C-level passes over lists, not a Python object per step.

``of_steps(steps)`` turns ``Step`` records (a full run entry, replayed by ``model``) into
columns; ``compact_drive.replay_compact(run)`` drives the state machine with a compact run
entry (``servesim.compact``) straight into the same columns and lanes, without expanding it to
per-step records. Both draw what the state holds (queue length, KV pages) and where
rejections and cancellations land, as ``model`` states, and ``tests/test_view.py`` holds them
equal on compact runs and their expansions.

The decode sets are kept as changes, as the page's script replays them: ``enter[n]`` are the
requests that decode at step ``n`` and did not at the last step that decoded, in batch order;
``leave[n]`` those that did and do not, in the order they entered.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, count, islice
from operator import ne, sub

LEFT = ("rejected", "cancelled")
SPARSE = ("prefill", "firsts", "preempt", "swap_out", "swap_in", "rejected", "cancelled")


@dataclass
class Columns:
    start_ms: list[float]
    end_ms: list[float]
    queue: list[int]
    kv_pages: list[int]
    decodes: list[int]  # how many requests each step decodes
    prefill: dict[int, list[tuple[str, int, int]]] = field(default_factory=dict)
    firsts: dict[int, list[str]] = field(default_factory=dict)
    preempt: dict[int, list[str]] = field(default_factory=dict)
    swap_out: dict[int, list[str]] = field(default_factory=dict)
    swap_in: dict[int, list[str]] = field(default_factory=dict)
    rejected: dict[int, list[str]] = field(default_factory=dict)
    cancelled: dict[int, list[str]] = field(default_factory=dict)
    enter: dict[int, list[str]] = field(default_factory=dict)
    leave: dict[int, list[str]] = field(default_factory=dict)
    # what ``deltas`` and ``idle`` made or were given (not part of what the columns hold)
    known: dict[str, list[int]] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.end_ms)

    def eventful(self) -> set[int]:
        """The steps that are not plain decode steps (a prefill, a move, a request leaving)."""
        found: set[int] = set()
        for name in ("prefill", "preempt", "swap_out", "swap_in", "rejected", "cancelled"):
            found.update(getattr(self, name))
        return found

    def deltas(self, name: str) -> list[int]:
        """Column ``name`` as each step's difference from the step before (the first's from 0),
        made once (the compact reader hands over the ones it builds the columns from)."""
        found = self.known.get(name)
        if found is None:
            values = getattr(self, name)
            found = self.known[name] = list(map(sub, values, chain((0,), values)))
        return found

    def idle(self) -> list[int]:
        """The steps that do not start when the step before ended (the first: at 0 ms)."""
        found = self.known.get("idle")
        if found is None:
            moved = map(ne, self.start_ms, chain((0.0,), self.end_ms))
            found = self.known["idle"] = list(compress(count(), moved))
        return found

    def changes(self, *names: str) -> list[int]:
        """The steps after the first where any of the columns ``names`` differs from the step
        before."""
        found: set[int] = set()
        for name in names:
            found.update(compress(count(1), islice(self.deltas(name), 1, None)))
        return sorted(found)


def of_steps(steps) -> Columns:
    """The columns of replayed ``Step`` records."""
    cols = Columns(
        [s.start_ms for s in steps],
        [s.end_ms for s in steps],
        [s.queue for s in steps],
        [s.kv_pages for s in steps],
        [len(s.decode) for s in steps],
    )
    for name in SPARSE:
        table = getattr(cols, name)
        for s in steps:
            if getattr(s, name):
                table[s.index] = list(getattr(s, name))
    previous: list[str] = []  # the last decode list that was not empty, as the page keeps it
    for n, step in enumerate(steps):
        if step.decode and step.decode != previous:
            gone, new, previous = decode_change(previous, step.decode)
            if gone:
                cols.leave[n] = gone
            if new:
                cols.enter[n] = new
    return cols


def decode_change(previous: list[str], decode) -> tuple[list[str], list[str], list[str]]:
    """From the last decode list that was not empty to ``decode``: the requests that left it,
    those that joined it (in batch order), and the list as the page keeps it (those that
    stayed, in their order, then the new ones)."""
    now, before = set(decode), set(previous)
    gone = [rid for rid in previous if rid not in now]
    new = [rid for rid in decode if rid not in before]
    return gone, new, [rid for rid in previous if rid in now] + new


class StepList(Sequence):
    """The ``Step`` records of columns, made as they are read (iterating is the fast way)."""

    def __init__(self, cols: Columns, step_type):
        self._cols, self._step = cols, step_type

    def __len__(self) -> int:
        return len(self._cols)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("step index out of range")
        for n, step in enumerate(self):
            if n == index:
                return step
        raise IndexError("step index out of range")  # not reached

    def __iter__(self) -> Iterator:
        c, make = self._cols, self._step
        kept: list[str] = []
        empty: list = []
        for n, (start, end, queue, pages, decodes) in enumerate(
            zip(c.start_ms, c.end_ms, c.queue, c.kv_pages, c.decodes)
        ):
            gone, new = c.leave.get(n), c.enter.get(n)
            if gone:
                out = set(gone)
                kept = [rid for rid in kept if rid not in out]
            if new:
                kept = kept + new
            yield make(
                n,
                start,
                end,
                c.prefill.get(n, empty),
                kept if decodes else [],
                c.preempt.get(n, ()),
                c.swap_out.get(n, ()),
                c.swap_in.get(n, ()),
                queue,
                pages,
                c.rejected.get(n, ()),
                c.cancelled.get(n, ()),
                c.firsts.get(n, ()),
            )


def left_early(left: list[tuple[float, str, str]], ends: list[float], cols: Columns) -> None:
    """Each rejection and cancellation ``(time, id, status)`` in the first step ending at or
    after its time."""
    for when, rid, what in sorted(left):
        if ends:
            step = min(bisect.bisect_left(ends, when - 1e-9), len(ends) - 1)
            table = cols.rejected if what == "rejected" else cols.cancelled
            table.setdefault(step, []).append(rid)
