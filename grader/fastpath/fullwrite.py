"""The full-format run file, written piece by piece from compact run entries (its JSON layout
is ``jsonlayout``'s).

``runfile.dumps(expand_document(doc), indent=2)`` builds every token time and every batch of
a run as Python objects and then walks them with ``json``'s pure-Python indenting encoder: on a
run of a few thousand requests that is hundreds of megabytes of objects and most of the
process's time. ``chunks(doc)`` yields the same text, byte for byte, a few requests or a few
hundred events at a time: memory holds the compact tables, the text of each step's end time and
of each distinct gap between decode steps, and one piece, never the expanded run. No token time
becomes an object: a request's token times are slices of the step texts, joined, and the events
are C-level iterators over per-step columns, interleaved with the constant text between them.

The bytes agree because every scalar is spelled as ``json``'s C encoder spells it (``repr`` of
floats, or orjson where ``jsonlayout.floats_text`` finds it spells the same; the same string
escapes with ``ensure_ascii=False``) and the layout is the one ``json.dumps(indent=2)`` writes:
a container whose members are all scalars is encoded in one call, with the newline and the
next level's indent as its item separator.
``tests/grader/test_fullwrite.py`` holds the text equal to ``runfile.dumps`` of the expanded
document.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Iterator
from itertools import chain, islice, repeat

from servesim.compact import _AFTER_EVENTS, _NO_METRICS, is_compact
from servesim.metrics import request_metrics

from .jsonlayout import INDENT, container, encode, json_list, key_text, scalar, texts, value_text

_HEAD = ("policy", "params", "device", "fault")  # a full entry's keys before "requests"
_EVENTS = 256  # events joined per piece written


def chunks(doc: dict) -> Iterator[str]:
    """``runfile.dumps(expand_document(doc), indent=2)`` in pieces, compact runs expanded as
    they are written."""

    def member(key, value) -> Iterator[str]:
        yield key_text(key)
        if key == "runs" and isinstance(value, list):
            yield from container((_run(run, 2) for run in value), 1, "[]")
        else:
            yield encode(value, 1)

    yield from container((member(k, v) for k, v in doc.items()), 0, "{}")
    yield "\n"


def _run(run: dict, level: int) -> Iterator[str]:
    """A run entry at ``level``: a full one as it is, a compact one expanded."""
    if not is_compact(run):
        yield encode(run, level)
        return
    inner = level + 1
    text = _Texts(run, level + 3)

    def value(key: str) -> Iterator[str]:
        yield key_text(key)
        yield encode(run[key], inner)

    def rows(key: str, texts: Iterable[str]) -> Iterator[str]:
        yield key_text(key)
        yield from texts

    members = [value(k) for k in _HEAD if k in run]
    members += [rows("requests", json_list(text.records(), inner, 8))]
    members += [rows("events", text.events(inner))]
    members += [value(k) for k in (*_AFTER_EVENTS, "summary") if k in run]
    yield from container(members, level, "{}")


class _Texts:
    """The text of a compact run's requests and events, one record at a time.

    ``level`` is the nesting of a record's keys. Every step end time is spelled once, and so
    is every gap between consecutive decode steps: a request's token times and most of its
    inter-token gaps are those spellings, joined (the same floats the lab's subtractions give).
    """

    def __init__(self, run: dict, level: int):
        self.run = run
        self.pad = "\n" + INDENT * level  # before each key of a record
        self.item = "\n" + INDENT * (level + 1)  # before each member of a record's lists
        self.inner = "\n" + INDENT * (level + 2)  # before each key of a prefill chunk
        self.close = "\n" + INDENT * (level - 1)  # before a record's closing brace
        self.ends, self.decode_steps = run["stepEndMs"], run["decodeSteps"]
        self.end_text = texts(self.ends)
        self.decode_text = list(map(self.end_text.__getitem__, self.decode_steps))
        decode_ends = list(map(self.ends.__getitem__, self.decode_steps))
        gaps = chain([0.0], map(operator.sub, islice(decode_ends, 1, None), decode_ends))
        # 8 bytes a gap where the times are floats (a file written by hand may hold integers)
        floats = set(map(type, decode_ends)) <= {float}
        self.gaps = array("d", gaps) if floats else list(gaps)
        del decode_ends
        self.gap_text = texts(self.gaps, recurring=True)
        self.ids = [scalar(rid) for rid in run["requests"]["id"]]

    def _list(self, texts: list[str]) -> str:
        if not texts:
            return "[]"
        return "[" + self.item + ("," + self.item).join(texts) + self.pad + "]"

    def _record(self, members: list[str]) -> str:
        return "{" + self.pad + ("," + self.pad).join(members) + self.close + "}"

    def records(self) -> Iterator[str]:
        """``expand_run(run)["requests"]``, record by record, in trace order."""
        columns = self.run["requests"]
        total = len(columns["id"])
        for name, column in columns.items():
            if len(column) != total:
                raise ValueError(
                    f"compact run: requests.{name} has {len(column)} entries, not {total}"
                )
        keys = [key_text(name) for name in columns]
        arrival, status = columns["arrivalMs"], columns.get("status")
        for n, (row, rows) in enumerate(zip(zip(*columns.values()), self._rows(total))):
            members = [key + value_text(v) for key, v in zip(keys, row) if v is not None]
            completed = status is None or status[n] == "completed"
            members += self._tokens(*rows, arrival[n], completed)
            yield self._record(members)

    def _rows(self, total: int) -> Iterator[tuple[list, list]]:
        """Each request's slices and resumes (grouped by request, as the format keeps them)."""
        slices, resumes = self.run["slices"], self.run.get("resumes", ())
        at_slice = at_resume = 0
        for n in range(total):
            start, begin = at_slice, at_resume
            while at_slice < len(slices) and slices[at_slice][0] == n:
                at_slice += 1
            while at_resume < len(resumes) and resumes[at_resume][0] == n:
                at_resume += 1
            yield slices[start:at_slice], resumes[begin:at_resume]
        if at_slice != len(slices) or at_resume != len(resumes):
            raise ValueError("compact run: slices or resumes out of request order")

    def _tokens(self, slices, resumes, arrival: float, completed: bool) -> list[str]:
        """A record's token fields: its token times, then ``request_metrics`` of them."""
        if resumes:  # rows of both kinds, merged in time order: spelled one by one
            return self._merged(slices, resumes, arrival, completed)
        ends, decode_steps, gaps = self.ends, self.decode_steps, self.gaps
        times, itl, most = [], [], None
        first = last = None
        tokens = 0
        for _, step, at, count in slices:
            if last is not None:  # a preempted request's gap to its recomputed first token
                itl.append(value_text(ends[step] - last))
                most = ends[step] - last if most is None else max(most, ends[step] - last)
            times.append(self.end_text[step])
            times += self.decode_text[at : at + count]
            last = ends[step]
            if first is None:
                first = last
            if count:
                entry = ends[decode_steps[at]] - last
                itl.append(value_text(entry))
                itl += self.gap_text[at + 1 : at + count]
                most = entry if most is None else max(most, entry)
                if count > 1:
                    most = max(most, *gaps[at + 1 : at + count])
                last = ends[decode_steps[at + count - 1]]
            tokens += 1 + count
        members = [key_text("tokenTimesMs") + self._list(times)]
        if not completed:
            return members + self._figures(_NO_METRICS)
        if first is None:
            raise ValueError("compact run: a completed request has no token times")
        figures = {"firstTokenMs": first, "finishMs": last, "ttftMs": first - arrival}
        figures |= {"itlMs": itl, "maxItlMs": most}
        figures["tpotMs"] = (last - first) / (tokens - 1) if tokens > 1 else None
        figures["e2eMs"] = last - arrival
        return members + self._figures(figures, spelled=True)

    def _merged(self, slices, resumes, arrival: float, completed: bool) -> list[str]:
        ends, decode_steps = self.ends, self.decode_steps
        times = []
        for _, step, at, count in slices:
            times.append(ends[step])
            times += [ends[s] for s in decode_steps[at : at + count]]
        for _, _step, at, count in resumes:
            times += [ends[s] for s in decode_steps[at : at + count]]
        times.sort()
        members = [key_text("tokenTimesMs") + self._list([value_text(t) for t in times])]
        return members + self._figures(
            request_metrics(arrival, times) if completed else _NO_METRICS
        )

    def _figures(self, figures: dict, spelled: bool = False) -> list[str]:
        """``figures`` as members; ``spelled``: ``itlMs`` already holds texts."""
        members = []
        for key, value in figures.items():
            if key == "itlMs":
                members.append(
                    key_text(key) + self._list(value if spelled else [value_text(v) for v in value])
                )
            else:
                members.append(key_text(key) + ("null" if value is None else value_text(value)))
        return members

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
