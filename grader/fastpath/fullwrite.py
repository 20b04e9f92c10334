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
from itertools import chain, islice

from servesim.compact import _AFTER_EVENTS, _NO_METRICS, is_compact
from servesim.metrics import request_metrics

from .fullevents import EventTexts
from .jsonlayout import INDENT, container, encode, json_list, key_text, scalar, texts, value_text

_HEAD = ("policy", "params", "device", "fault")  # a full entry's keys before "requests"


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


class _Texts(EventTexts):
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
