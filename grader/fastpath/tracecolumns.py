"""Reading a trace into columns: a million requests without a dict and a tuple each.

``servesim.trace.read_trace_file`` keeps every request twice, as the decoded dict (the run
file's ``trace``) and as a ``Request``: about 500 bytes a request, and decoding a million dicts
costs seconds of garbage-collector passes. ``read_trace`` reads a *plain* trace (every request
exactly ``{"id", "arrivalMs", "inputTokens", "outputTokens"}``, in that order, with valid
values) into columns as the decoder meets each request, and returns a ``servesim`` ``Trace``
whose ``requests`` (``Requests``) and ``raw["requests"]`` (``RawRequests``) make each
``Request`` and each dict on demand, equal to what ``read_trace_file`` makes. Any other file
(unit 08's optional fields, a later schema's, anything invalid) is read by ``read_trace_file``
itself, so its checks and error messages are the only ones.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterator, Sequence
from operator import itemgetter
from pathlib import Path

from servesim.trace import Request, Trace, TraceError, parse_trace, read_trace_file

PLAIN = ("id", "arrivalMs", "inputTokens", "outputTokens")
_EXACT = 2**53  # integers up to this are exact as floats


class TraceColumns:
    """The requests of a plain trace, one column per field, in trace order.

    ``arrival`` holds ``float(arrivalMs)``; ``written_int`` is 1 where the file wrote an
    integer (the run file's copy of the trace writes it back as one).
    """

    def __init__(self):
        self.ids: list[str] = []
        self.arrival = array("d")
        self.written_int = bytearray()
        self.prompt = array("q")
        self.output = array("q")

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, pairs: list) -> bool:
        """Add the request of a decoded object's ``pairs`` if it is plain and valid."""
        if len(pairs) != 4:
            return False
        (k0, rid), (k1, arrival), (k2, prompt), (k3, output) = pairs
        if (k0, k1, k2, k3) != PLAIN or type(rid) is not str or not rid:
            return False
        if type(prompt) is not int or prompt < 1 or type(output) is not int or output < 1:
            return False
        kind = type(arrival)
        if kind is float:
            if not 0.0 <= arrival < math.inf:
                return False
        elif kind is not int or not 0 <= arrival <= _EXACT:
            return False
        self.ids.append(rid)
        self.arrival.append(arrival)
        self.written_int.append(kind is int)
        self.prompt.append(prompt)
        self.output.append(output)
        return True

    def records(self, start: int, stop: int) -> list[dict]:
        """Requests ``start`` to ``stop`` as the trace file's dicts."""
        arrival = self.arrival[start:stop].tolist()
        if any(self.written_int[start:stop]):
            arrival = [int(a) if w else a for a, w in zip(arrival, self.written_int[start:stop])]
        return [
            {"id": i, "arrivalMs": a, "inputTokens": p, "outputTokens": o}
            for i, a, p, o in zip(
                self.ids[start:stop],
                arrival,
                self.prompt[start:stop].tolist(),
                self.output[start:stop].tolist(),
            )
        ]


class Requests(Sequence):
    """A column trace's ``requests``: each ``Request`` made when it is asked for."""

    def __init__(self, columns: TraceColumns):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, at):
        c = self.columns
        if isinstance(at, slice):
            return tuple(self[i] for i in range(*at.indices(len(c))))
        return Request(c.ids[at], c.arrival[at], c.prompt[at], c.output[at])

    def __iter__(self) -> Iterator[Request]:
        c = self.columns
        return map(Request, c.ids, c.arrival, c.prompt, c.output)

    def output_total(self) -> int:
        """Every request's output tokens, summed (``servesim.runfile.default_format``)."""
        return sum(self.columns.output)


class RawRequests(Sequence):
    """A column trace's ``raw["requests"]``: the file's dicts, made when asked for.

    The run-file writer (``grader.jsonio``) encodes them a block at a time (``json_blocks``).
    """

    def __init__(self, columns: TraceColumns):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, at):
        if isinstance(at, slice):
            start, stop, step = at.indices(len(self))
            return self.columns.records(start, stop)[::step]
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError("request index out of range")
        return self.columns.records(at, at + 1)[0]

    def __iter__(self) -> Iterator[dict]:
        for block in self.json_blocks(4096):
            yield from block

    def json_blocks(self, size: int) -> Iterator[list[dict]]:
        for at in range(0, len(self), size):
            yield self.columns.records(at, at + size)


def read_trace(path: Path) -> Trace:
    """``read_trace_file(path)``: the same trace, with a plain trace's requests as columns."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return read_trace_file(path)  # its error
    whole = _whole_document(text) if len(text) <= _WHOLE_CHARS else None
    if whole is not None:
        doc, columns = whole
    else:
        doc, columns = _by_request(text)
        if doc is None:
            return read_trace_file(path)
    del text
    if len(set(columns.ids)) < len(columns):
        return read_trace_file(path)  # what it is not plain for, read (or refused) as ever
    try:  # the document's own fields, checked with its first request
        head = parse_trace({**doc, "requests": columns.records(0, 1)}, source=str(path))
    except TraceError:
        return read_trace_file(path)
    raw = {**doc, "requests": RawRequests(columns)}
    return Trace(head.name, head.description, Requests(columns), raw)


# Below this many characters a trace is decoded whole by orjson and its requests moved into
# columns afterwards (a tenth of the time of a hook per request); above, the dicts of every
# request would exist at once, so the standard decoder hands each to ``take`` as it meets it.
_WHOLE_CHARS = 4 << 20


def _whole_document(text: str) -> tuple[dict, TraceColumns] | None:
    """(the document without its requests, its requests as columns) if ``text`` is a plain
    trace (what ``_by_request`` accepts, and nothing more), else None."""
    try:
        import orjson

        doc = orjson.loads(text)
    except (ImportError, ValueError):
        return None
    requests = doc.get("requests") if type(doc) is dict else None
    if type(requests) is not list or not requests:
        return None
    try:
        if _holds_dict(doc, skip=requests):
            return None
    except RecursionError:
        return None
    # each check runs in C over a column (map, set, min): a generator per value costs more
    # than decoding; anything unusual is left to ``_by_request``
    if set(map(type, requests)) != {dict} or not all(map(PLAIN.__eq__, map(tuple, requests))):
        return None
    ids, arrival, prompt, output = (list(map(itemgetter(k), requests)) for k in PLAIN)
    if set(map(type, ids)) != {str} or not all(ids):
        return None
    if set(map(type, prompt)) | set(map(type, output)) != {int} or min(*prompt, *output) < 1:
        return None
    kinds = set(map(type, arrival))
    if not kinds <= {int, float} or min(arrival) < 0 or max(arrival) > _EXACT:
        return None
    if not sum(arrival) < math.inf:  # no NaN or infinity (nor a sum that overflows)
        return None
    if kinds == {float}:
        written_int = bytearray(len(arrival))
    else:
        written_int = bytearray(kind is int for kind in map(type, arrival))
    columns = TraceColumns()
    columns.ids, columns.written_int = ids, written_int
    columns.arrival, columns.prompt, columns.output = (
        array("d", arrival),
        array("q", prompt),
        array("q", output),
    )
    return {**doc, "requests": [None] * len(requests)}, columns


def _holds_dict(value, skip) -> bool:
    """Whether ``value`` holds a dict below it, leaving out the list ``skip``."""
    members = value.values() if type(value) is dict else value if type(value) is list else ()
    return any(type(m) is dict or _holds_dict(m, skip) for m in members if m is not skip)


def _by_request(text: str) -> tuple[dict | None, TraceColumns]:
    """The document and its requests as columns, each request taken as the standard decoder
    meets it; (None, ...) when the document is not a plain trace."""
    columns = TraceColumns()
    others = 0

    def hook(pairs: list):
        nonlocal others
        if columns.take(pairs):
            return None  # the request lives in the columns from now on
        others += 1
        return dict(pairs)

    try:
        doc = json.loads(text, object_pairs_hook=hook)
    except ValueError:
        return None, columns
    requests = doc.get("requests") if isinstance(doc, dict) else None
    plain = others == 1 and isinstance(requests, list) and len(requests) == len(columns) > 0
    if not plain or requests.count(None) != len(requests):
        return None, columns
    return doc, columns


def listed(document: dict) -> dict:
    """A run-file document whose trace's requests are a list (for writers of lists only)."""
    trace = document.get("trace")
    if isinstance(trace, dict) and isinstance(trace.get("requests"), RawRequests):
        return {**document, "trace": {**trace, "requests": list(trace["requests"])}}
    return document
