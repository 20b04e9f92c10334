"""The ``events`` list of a full-format run file, written from a compact run's tables
(``fullwrite``'s other half: it writes the requests)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain, islice, repeat

from .jsonlayout import INDENT, key_text, value_text

_EVENTS = 256  # events joined per piece written


class EventTexts:
    """The text of a compact run's events, in pieces.

    A base of ``fullwrite._Texts``, which sets what these methods read: ``run`` (the compact
    entry), ``ends`` and ``end_text`` (each step's end time and its spelling),
    ``decode_steps``, ``ids`` (each request's id spelled), and the indents ``pad``, ``item``,
    ``inner`` and ``close`` of a record's keys, list members, chunk keys and closing brace.
    """

    run: dict
    ends: list
    end_text: list[str]
    decode_steps: list[int]
    ids: list[str]
    pad: str
    item: str
    inner: str
    close: str

    def _list(self, texts: list[str]) -> str:
        if not texts:
            return "[]"
        return "[" + self.item + ("," + self.item).join(texts) + self.pad + "]"

    def events(self, level: int) -> Iterator[str]:
        """``expand_run(run)["events"]``, the list at ``level``, in pieces of ``_EVENTS``
        events.

        An event's text is its columns (index, start, end, decode batch, prefill chunks, moves)
        interleaved with the constant text between them, all lazy C-level iterators over the
        steps: the start is the previous step's end text or the idle wait's start; the decode
        batches and prefill lists are made from their own tables (running-set changes,
        chunks), one text per change, repeated over the steps it holds for.
        """
        run, pad, count = self.run, self.pad, len(self.ends)
        if not count:
            yield "[]"
            return
        moves = [(table, "," + pad + key_text(key)) for table, key in _MOVES if table in run]
        moved = self._moved(moves)
        idle = {step: value_text(start) for step, start in run["idleStarts"]}
        starts = map(idle.get, range(count), chain([value_text(0.0)], self.end_text))
        between = "\n" + INDENT * (level + 1)  # before each event
        constants = (
            between + "{" + pad + '"index": ',
            "," + pad + '"startMs": ',
            "," + pad + '"endMs": ',
            "," + pad + '"decode": ',
            "," + pad + '"prefill": ',
            "",  # the moves, if any
            self.close + "}",
        )
        columns = (
            map(int.__repr__, range(count)),
            starts,
            self.end_text,
            self._batches(count),
            self._prefills(count),
            map(moved.get, range(count), repeat("".join(key + "[]" for _, key in moves))),
        )
        pieces = chain.from_iterable(
            zip(
                chain(["[" + constants[0]], repeat("," + constants[0])),
                *(x for pair in zip(columns, map(repeat, constants[1:])) for x in pair),
            )
        )
        width = 2 * len(columns) + 1
        while block := list(islice(pieces, width * _EVENTS)):
            yield "".join(block)
        yield "\n" + INDENT * level + "]"

    def _moved(self, moves: list[tuple[str, str]]) -> dict[int, str]:
        """The text of each step's move lists (``preempt``, ``swapOut``, ``swapIn``), for the
        steps that move a request (the others have empty lists)."""
        by = [_by_step(self.run[table]) for table, _ in moves]
        ids = self.ids
        return {
            step: "".join(
                key + (self._list([ids[n] for n in lists[step]]) if step in lists else "[]")
                for lists, (_, key) in zip(by, moves)
            )
            for step in set().union(*by)
        }

    def _prefills(self, count: int) -> Iterator[str]:
        """Each step's prefill list, step by step (a step without chunks: ``[]``)."""
        return chain.from_iterable(self._prefill_runs(count))

    def _prefill_runs(self, count: int) -> Iterator[Iterable[str]]:
        ids, item, inner = self.ids, self.item, self.inner
        done = -1  # the last step given
        group: list[str] = []
        for step, n, at, tokens in self.run["chunks"]:
            if step != done:
                if group:
                    yield (self._list(group),)
                    group = []
                yield repeat("[]", step - done - 1)
                done = step
            fields = f'"id": {ids[n]},{inner}"fromToken": {at},{inner}"tokens": {tokens}'
            group.append("{" + inner + fields + item + "}")
        if group:
            yield (self._list(group),)
        yield repeat("[]", count - done - 1)

    def _batches(self, count: int) -> Iterator[str]:
        """Each step's decode batch, step by step (a step that does not decode: ``[]``)."""
        return chain.from_iterable(self._batch_runs(count))

    def _batch_runs(self, count: int) -> Iterator[Iterable[str]]:
        batches = chain.from_iterable(self._batch_texts())  # one per decode step
        done = -1  # the last step given
        streak = 0  # decode steps in a row since then
        for step in self.decode_steps:
            if step != done + 1:
                yield islice(batches, streak)
                yield repeat("[]", step - done - 1)
                streak = 0
            streak += 1
            done = step
        yield islice(batches, streak)
        yield repeat("[]", count - done - 1)

    def _batch_texts(self) -> Iterator[Iterable[str]]:
        """The batch of each decode step, as runs of one text.

        The decode batch is the running set in the order its members entered it
        (``servesim.compact``): a slice or resume with ``count`` decodes from decode index
        ``at`` holds a place for decode steps ``at`` to ``at + count - 1``; entries are made
        in time order (``_entries``), and at one decode index those leaving go before those
        entering.
        """
        joins: dict[int, list[int]] = {}
        leaves: dict[int, list[int]] = {}
        for *_, n, at, count in _entries(self.run):
            if count:
                joins.setdefault(at, []).append(n)
                leaves.setdefault(at + count, []).append(n)
        ids, total = self.ids, len(self.decode_steps)
        running: dict[int, None] = {}
        text, since = "[]", 0
        for at in sorted(joins.keys() | leaves.keys()):
            if at >= total:
                break
            yield repeat(text, at - since)
            for n in leaves.get(at, ()):
                del running[n]
            for n in joins.get(at, ()):
                running[n] = None
            text, since = self._list([ids[n] for n in running]), at
        yield repeat(text, total - since)


_MOVES = (("preempts", "preempt"), ("swapOuts", "swapOut"), ("swapIns", "swapIn"))


def _by_step(rows: list[list[int]]) -> dict[int, list[int]]:
    table: dict[int, list[int]] = {}
    for step, n in rows:
        table.setdefault(step, []).append(n)
    return table


def _entries(run: dict) -> Iterator[tuple]:
    """Every entry into the running set as ``(step, kind, place, request, first, count)``, in
    the order of entry: kind 0 a resume (by its place among the step's swap-ins), kind 1 a
    slice (by its chunk's place in the step's batch)."""
    position, seen = {}, {}
    for step, n, _start, _tokens in run["chunks"]:
        position[step, n] = seen[step] = seen.get(step, -1) + 1
    swapped_in, taken = {}, {}
    for step, n in run.get("swapIns", ()):
        swapped_in[step, n] = taken[step] = taken.get(step, -1) + 1
    rows = [(step, 1, position[step, n], n, at, count) for n, step, at, count in run["slices"]]
    rows += [
        (step, 0, swapped_in[step, n], n, at, count)
        for n, step, at, count in run.get("resumes", ())
    ]
    rows.sort()
    return iter(rows)
