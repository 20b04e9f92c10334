"""The engine's queues, kept so that each step costs work in proportion to the batch and to the
changes (arrivals, completions, preemptions), never to the length of a queue.

``WaitingQueue`` holds arrived requests whose prefill is not finished, as one queue: new
arrivals join the back (arrival order, ties in trace order), a request that leaves (prefill
finished, cancelled) is taken out, and a preempted sequence is put at the very front, as vLLM
V1's ``prepend_request`` does: the victims of one step in turn, in the order the batch names
them, so the last one named stands first, ahead of every earlier victim. Nobody else moves.

It is kept in two parts: the ``front`` (sequences that have started prefill at some point:
partial prefills and preempted ones) and the ``fresh`` requests that arrived after them. A fresh
request that starts prefill moves to the end of the front once every request ahead of it has
started, so a policy that starts requests in FIFO order sees exactly the arrival order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from collections.abc import Sequence as SequenceABC
from itertools import chain, islice

from .contract import GUARD, LIST_EDITS, edit
from .sequence import Sequence


class SeqView(SequenceABC):
    """A read-only, lazy sequence of ``Sequence`` objects over the engine's own containers.

    Behaves like the tuple it stands for: ``len``, truth, iteration, ``[i]``, slices and ``+``
    (which return tuples), ``in``, ``index``, ``==``. It reflects the engine's state at the
    moment of the call: keep the items, not the view. A list's edits (``append``, ``sort``,
    item assignment, ...) stop the policy with a message naming the view (``contract``).
    """

    __slots__ = ("_name", "_parts")
    __hash__ = None  # compares by content, like the tuples it stands for

    def __init__(self, *parts, name: str = "a list of the view"):
        self._parts = parts
        self._name = name

    def __len__(self) -> int:
        return sum(len(part) for part in self._parts)

    def __bool__(self) -> bool:
        return any(self._parts)

    def __iter__(self) -> Iterator[Sequence]:
        return chain(*self._parts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += len(self)
        for part in self._parts:
            if 0 <= index < len(part):
                return part[index]
            index -= len(part)
        raise IndexError("sequence index out of range")

    def __eq__(self, other) -> bool:
        return tuple(self) == tuple(other)

    def __add__(self, other) -> tuple:
        return (*self, *other)

    def __radd__(self, other) -> tuple:
        return (*other, *self)

    def __repr__(self) -> str:
        return f"SeqView({[s.id for s in islice(self, 8)]}{'...' if len(self) > 8 else ''})"


def _refusing(method: str):
    def refuse(self, *args, **kwargs):
        GUARD.refuse(f"{self._name}: {edit(method)}")

    refuse.__name__ = method
    return refuse


# a policy that edits a list it was given learns which one, not that a method is missing
for _method in LIST_EDITS:
    if _method not in ("__iadd__", "__imul__"):  # ``+=`` on a name makes a new tuple
        setattr(SeqView, _method, _refusing(_method))


class WaitingQueue:
    def __init__(self):
        self.front: deque[Sequence] = deque()
        self.fresh: deque[Sequence] = deque()
        self.unstarted = 0  # fresh requests that never started prefill (what queueCap counts)

    def view(self) -> SeqView:
        return SeqView(self.front, self.fresh, name="view.waiting")

    def __len__(self) -> int:
        return len(self.front) + len(self.fresh)

    def add_arrival(self, seq: Sequence) -> None:
        self.fresh.append(seq)
        self.unstarted += 1

    def mark_started(self, seq: Sequence) -> None:
        if not seq.started:
            seq.started = True
            self.unstarted -= 1
            self._advance()

    def add_preempted(self, seq: Sequence) -> None:
        """A preempted sequence goes to the very front of the queue (vLLM's ``prepend_request``)."""
        self.front.appendleft(seq)

    def remove(self, seq: Sequence) -> None:
        """Take out a sequence whose prefill finished, or that was cancelled."""
        for part in (self.front, self.fresh):
            for index, item in enumerate(part):
                if item is seq:
                    del part[index]
                    if not seq.started:
                        self.unstarted -= 1
                    self._advance()
                    return
        raise KeyError(seq.id)

    def _advance(self) -> None:
        fresh = self.fresh
        while fresh and fresh[0].started:
            self.front.append(fresh.popleft())
