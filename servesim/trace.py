"""Traces: the requests a run replays, and the one place that validates them.

A trace is JSON: ``{"name", "description", "requests": [{"id", "arrivalMs", "inputTokens",
"outputTokens"}, ...]}``. Budgets and admission read three optional request fields:
``maxOutputTokens`` (the declared maximum a reservation counts, an integer >= outputTokens,
default outputTokens),
``deadlineMs`` (a number > 0, relative to arrival, on the first token) and ``tenant`` (a
non-empty string). Any other field is refused, with the known field it probably misspells
(``fields.py``): a typo must not quietly change what a trace means. Every problem is reported
as one ``TraceError`` that names the trace, the request and the field.

Client cancels, shared prefixes and output buffers read three more. ``cancelMs`` (a number > 0,
relative to arrival): the client cancels the request then (``state.py`` says when the engine
sees it). ``prefix``: the request's prompt starts with shared content, written as a list of
segments ``[{"id": "system", "tokens": 32}, {"id": "doc-7", "tokens": 100}]``: segment ``id``
stands for one fixed stream of token ids, and the prompt's first tokens are the first ``tokens``
of each segment's stream in turn (the segments' tokens sum to at most ``inputTokens``); the rest
of the prompt, and every output token, are the request's own. So two requests hold the same
first n tokens exactly when their segment lists agree up to n tokens, and the KV pages of those
tokens can be shared (``prefixcache.py`` derives each full page's key from this).
``readBytesPerS`` (a number > 0): how fast the client reads the request's streamed output, on a
device with an output buffer (``streaming.py``); without it the client reads at once.
``readsMs`` (a served stream: a list of at most ``outputTokens`` times, in order): when, after
arrival, its client read each streamed event (``readlog.py``); not with ``readBytesPerS``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import readlog
from .fields import unknown_field_message

TRACE_FIELDS = ("name", "description", "requests")
REQUIRED_FIELDS = ("id", "arrivalMs", "inputTokens", "outputTokens")
REQUEST_FIELDS = (
    *REQUIRED_FIELDS,
    *("maxOutputTokens", "deadlineMs", "tenant", "cancelMs", "prefix", "readBytesPerS"),
    "readsMs",
)
SEGMENT_FIELDS = ("id", "tokens")
_REQUEST_FIELDS = frozenset(REQUEST_FIELDS)


class TraceError(ValueError):
    """A trace that cannot be used; the message names what is wrong."""


class Request(NamedTuple):
    """One request of a trace; immutable (a named tuple: cheap to make by the million)."""

    id: str
    arrival_ms: float
    input_tokens: int
    output_tokens: int
    max_output_tokens: int | None = None  # None: the same as output_tokens
    deadline_ms: float | None = None
    tenant: str = ""
    cancel_ms: float | None = None  # client cancels: the client leaves at arrival + cancel_ms
    prefix: tuple[tuple[str, int], ...] = ()  # prefix cache: shared prompt segments (id, tokens)
    read_bytes_per_s: float | None = None  # output buffers: the client's read rate (None: at once)
    reads_ms: tuple[float, ...] | None = None  # a served stream's read log (readlog.py)

    @property
    def declared_output(self) -> int:
        return self.output_tokens if self.max_output_tokens is None else self.max_output_tokens


@dataclass(frozen=True)
class Trace:
    name: str
    description: str
    requests: tuple[Request, ...]
    raw: dict = field(repr=False, compare=False)  # the validated document


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_trace(doc, source: str = "trace") -> Trace:
    """Validate a decoded trace document and return it as a ``Trace``."""
    if not isinstance(doc, dict):
        raise TraceError(f"{source}: the top level must be an object with a 'requests' list")
    if unknown := unknown_field_message(doc, TRACE_FIELDS):
        raise TraceError(f"{source}: {unknown}")
    requests = doc.get("requests")
    if not isinstance(requests, list) or not requests:
        raise TraceError(f"{source}: field 'requests' must be a non-empty list")
    name = doc.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise TraceError(f"{source}: field 'name' must be a non-empty string")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise TraceError(f"{source}: field 'description' must be a string")

    seen: set[str] = set()
    parsed = []
    for index, item in enumerate(requests, start=1):
        if not isinstance(item, dict):
            raise TraceError(f"{source}: request #{index}: must be an object")
        rid = item.get("id")
        if not isinstance(rid, str) or not rid:
            raise TraceError(f"{source}: request #{index}: field 'id' must be a non-empty string")
        if rid in seen:
            raise TraceError(
                f"{_where(source, rid)} (#{index}): field 'id' duplicates an earlier request"
            )
        seen.add(rid)
        arrival = item.get("arrivalMs")
        prompt, output = item.get("inputTokens"), item.get("outputTokens")
        if not (
            _is_number(arrival)
            and math.isfinite(arrival)
            and arrival >= 0
            and _is_int(prompt)
            and prompt >= 1
            and _is_int(output)
            and output >= 1
        ):
            _invalid_request(item, _where(source, rid))
        # the optional fields (or unknown ones) make a request longer than its four
        extra = _unit08(item, _where(source, rid)) if len(item) > 4 else {}
        parsed.append(Request(rid, float(arrival), prompt, output, **extra))
    return Trace(name=name, description=description, requests=tuple(parsed), raw=doc)


def _where(source: str, rid: str) -> str:
    return f"{source}: request '{rid}'"


def _invalid_request(item: dict, where: str) -> None:
    """Raise the error for the first problem of a request's required fields (an unknown
    field first: ``inputTokns`` is a typo before it is a missing ``inputTokens``)."""
    if unknown := unknown_field_message(item, REQUEST_FIELDS):
        raise TraceError(f"{where}: {unknown}")
    for key in ("arrivalMs", "inputTokens", "outputTokens"):
        if key not in item:
            raise TraceError(f"{where}: field '{key}' is missing")
    arrival = item["arrivalMs"]
    if not _is_number(arrival) or not math.isfinite(arrival) or arrival < 0:
        raise TraceError(
            f"{where}: field 'arrivalMs' must be a finite number >= 0, got {arrival!r}"
        )
    for key in ("inputTokens", "outputTokens"):
        value = item[key]
        if not _is_int(value) or value < 1:
            raise TraceError(f"{where}: field '{key}' must be an integer >= 1, got {value!r}")


def _unit08(item: dict, where: str) -> dict:
    """The optional fields of one request, validated; any other is refused."""
    if not _REQUEST_FIELDS.issuperset(item) and (
        unknown := unknown_field_message(item, REQUEST_FIELDS)
    ):
        raise TraceError(f"{where}: {unknown}")
    extra = {}
    if "maxOutputTokens" in item:
        value, least = item["maxOutputTokens"], item["outputTokens"]
        if not _is_int(value) or value < least:
            raise TraceError(
                f"{where}: field 'maxOutputTokens' must be an integer >= outputTokens ({least}), "
                f"got {value!r}"
            )
        extra["max_output_tokens"] = value
    for key, name in (
        ("deadlineMs", "deadline_ms"),
        ("cancelMs", "cancel_ms"),
        ("readBytesPerS", "read_bytes_per_s"),
    ):
        if key in item:
            extra[name] = _positive(item[key], key, where)
    if "tenant" in item:
        value = item["tenant"]
        if not isinstance(value, str) or not value:
            raise TraceError(f"{where}: field 'tenant' must be a non-empty string, got {value!r}")
        extra["tenant"] = value
    if "prefix" in item:
        extra["prefix"] = _prefix(item["prefix"], item["inputTokens"], where)
    if "readsMs" in item:
        if "readBytesPerS" in item:
            raise TraceError(f"{where}: fields 'readsMs' and 'readBytesPerS' exclude each other")
        if problem := readlog.valid(item["readsMs"], item["outputTokens"]):
            raise TraceError(f"{where}: field 'readsMs' {problem}")
        extra["reads_ms"] = tuple(float(v) for v in item["readsMs"])
    return extra


def _positive(value, field: str, where: str) -> float:
    """A duration in ms counted from arrival, or a read rate: a finite number > 0."""
    if not _is_number(value) or not math.isfinite(value) or value <= 0:
        raise TraceError(f"{where}: field '{field}' must be a finite number > 0, got {value!r}")
    return float(value)


def _prefix(value, prompt: int, where: str) -> tuple[tuple[str, int], ...]:
    """A request's ``prefix``: a non-empty list of ``{"id", "tokens"}`` segments whose tokens sum
    to at most the prompt."""
    if not isinstance(value, list) or not value:
        raise TraceError(f"{where}: field 'prefix' must be a non-empty list of segments")
    segments = []
    for n, seg in enumerate(value):
        at = f"{where}: field 'prefix[{n}]'"
        if not isinstance(seg, dict):
            raise TraceError(f'{at} must be an object {{"id", "tokens"}}')
        if unknown := unknown_field_message(seg, SEGMENT_FIELDS):
            raise TraceError(f"{at}: {unknown}")
        sid, tokens = seg.get("id"), seg.get("tokens")
        if not isinstance(sid, str) or not sid:
            raise TraceError(f"{at}: 'id' must be a non-empty string, got {sid!r}")
        if not _is_int(tokens) or tokens < 1:
            raise TraceError(f"{at}: 'tokens' must be an integer >= 1, got {tokens!r}")
        segments.append((sid, tokens))
    total = sum(tokens for _, tokens in segments)
    if total > prompt:
        raise TraceError(
            f"{where}: field 'prefix' covers {total} tokens, more than inputTokens ({prompt})"
        )
    return tuple(segments)


def read_trace_file(path: Path) -> Trace:
    """Read and validate a JSON trace file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the trace ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise TraceError(
            f"{path}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x});"
            " save the trace as UTF-8 JSON"
        ) from None
    try:
        doc = json.loads(text)  # NaN/Infinity parse, then fail field validation
    except ValueError as exc:
        raise TraceError(f"{path}: not valid JSON ({exc})") from None
    return parse_trace(doc, source=str(path))


def resolve_trace(name_or_path: str, traces_dir: Path) -> Path:
    """A trace argument is either a path to a file or the name of a trace in ``traces_dir``."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".json" or candidate.exists():
        return candidate
    named = Path(traces_dir) / f"{name_or_path}.json"
    if named.exists():
        return named
    known = sorted(p.stem for p in Path(traces_dir).glob("*.json"))
    raise TraceError(
        f"unknown trace '{name_or_path}': not a file, and not one of {', '.join(known) or 'none'}"
    )
