"""The one way a submitted run entry reaches the verdict: its size checked against its trace,
then normalised to the full format.

    oversize(run, trace_doc) -> Oversize | None
    normalise_run(run, trace_doc) -> dict      (raises RunTooLarge)

A valid schedule of a trace needs at most, whatever the policy:

- per request, one token time (and one slice of a compact entry) per output token: a token is
  emitted once, and a preemption keeps the tokens already emitted;
- one decode entry per output token of the trace: every decode emits a token;
- one prefill chunk per prefill position: the prompts, plus what preemptions drop and prefill
  again, allowed up to ``RECOMPUTE_ALLOWANCE`` times the trace's prompt and output positions
  (the reference recomputes at most a quarter of them);
- one step per new position (a step holds at least one), one preemption per recomputed position;
- swaps (devices with a host pool): swap-outs, swap-ins and the resumes of a compact entry
  within the same allowance as preemptions (the decode tokens after a resume count among the
  request's tokens).

``oversize`` reads only the lengths of the entry's lists (full or compact), so a run file that
declares more work than that is refused before anything is expanded, replayed or validated
against the schema. ``normalise_run`` expands a compact entry (``servesim.compact``) only after
that check; the verdict, the replay and every score read its result and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

RECOMPUTE_ALLOWANCE = 3


class RunTooLarge(ValueError):
    """The run entry declares more work than its trace allows (``oversize`` says what)."""


@dataclass(frozen=True)
class Oversize:
    what: str  # the list that is too long, by its schema name (safe for hidden cases)
    detail: str  # with the numbers: visible cases and staff only


@dataclass(frozen=True)
class TraceBounds:
    outputs: tuple[int, ...]  # outputTokens per request, in trace order
    prompts: int  # the trace's prompt tokens

    @classmethod
    def of(cls, trace_doc: dict) -> TraceBounds:
        requests = trace_doc["requests"]
        outputs = tuple(r["outputTokens"] for r in requests)
        return cls(outputs, sum(r["inputTokens"] for r in requests))

    @property
    def recompute(self) -> int:
        return RECOMPUTE_ALLOWANCE * (self.prompts + sum(self.outputs))

    @property
    def chunks(self) -> int:
        return self.prompts + self.recompute

    @property
    def steps(self) -> int:
        return self.prompts + sum(self.outputs) + self.recompute


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _first_over(checks) -> Oversize | None:
    for what, count, most in checks:
        if count > most:
            return Oversize(what, f"the run declares {count} {what}, its trace allows {most}")
    return None


def oversize(run, trace_doc: dict) -> Oversize | None:
    """The first list of ``run`` longer than any valid schedule of the trace needs (None: all
    within bounds). Wrong types count as empty: the schema check that follows rejects them."""
    if not isinstance(run, dict):
        return None
    bounds = TraceBounds.of(trace_doc)
    if run.get("format") == "compact":
        return _compact_oversize(run, bounds)
    requests = _list(run.get("requests"))
    if len(requests) != len(bounds.outputs):
        return _count_mismatch(len(requests), bounds)
    for number, (req, most) in enumerate(zip(requests, bounds.outputs, strict=True), 1):
        found = _first_over((what, count, most) for what, count in _full_tokens(req))
        if found is not None:
            return Oversize(found.what, f"request #{number}: {found.detail}")
    return _first_over(_full_lists(run, bounds))


def _count_mismatch(count: int, bounds: TraceBounds) -> Oversize:
    return Oversize("requests", f"the run has {count} requests, the trace {len(bounds.outputs)}")


def _full_tokens(req) -> list[tuple[str, int]]:
    if not isinstance(req, dict):
        return []
    return [(name, len(_list(req.get(name)))) for name in ("tokenTimesMs", "itlMs")]


def _full_lists(run: dict, bounds: TraceBounds):
    events = _list(run.get("events"))
    yield "events", len(events), bounds.steps
    totals = dict.fromkeys(("decode", "prefill", "preempt", "swapOut", "swapIn"), 0)
    for event in events:  # one pass over the events for every list they hold
        if isinstance(event, dict):
            for name in totals:
                totals[name] += len(_list(event.get(name)))
    yield "decode entries", totals["decode"], sum(bounds.outputs)
    yield "prefill chunks", totals["prefill"], bounds.chunks
    for name in ("preempt", "swapOut", "swapIn"):
        yield f"{name} entries", totals[name], bounds.recompute


def _compact_oversize(run: dict, bounds: TraceBounds) -> Oversize | None:
    """A compact entry: its request columns, each request's slices and the tokens they expand
    to (one from the prefill, ``count`` decodes), then the timeline's tables."""
    columns = run.get("requests")
    for column in columns.values() if isinstance(columns, dict) else ():
        if isinstance(column, list) and len(column) != len(bounds.outputs):
            return _count_mismatch(len(column), bounds)
    entries, tokens = [0] * len(bounds.outputs), [0] * len(bounds.outputs)
    for table, at_entry in (("slices", 1), ("resumes", 0)):
        for item in _list(run.get(table)):
            if not (isinstance(item, list) and len(item) == 4):
                continue
            n, count = item[0], item[3]
            if isinstance(n, int) and 0 <= n < len(entries):
                entries[n] += at_entry
                tokens[n] += at_entry + (count if isinstance(count, int) and count > 0 else 0)
    for number, most in enumerate(bounds.outputs):
        found = _first_over(
            (("slices", entries[number], most), ("slice tokens", tokens[number], most))
        )
        if found is not None:
            return Oversize(found.what, f"request #{number + 1}: {found.detail}")
    return _first_over(_compact_lists(run, bounds))


def _compact_lists(run: dict, bounds: TraceBounds):
    yield "stepEndMs", len(_list(run.get("stepEndMs"))), bounds.steps
    yield "idleStarts", len(_list(run.get("idleStarts"))), bounds.steps
    yield "decodeSteps", len(_list(run.get("decodeSteps"))), bounds.steps
    yield "chunks", len(_list(run.get("chunks"))), bounds.chunks
    for name in ("preempts", "swapOuts", "swapIns", "resumes"):
        yield name, len(_list(run.get(name))), bounds.recompute
    yield "slices", len(_list(run.get("slices"))), sum(bounds.outputs)


def normalise_run(run: dict, trace_doc: dict) -> dict:
    """The full run entry the verdict reads: ``run`` itself when full, its expansion when
    compact; raises ``RunTooLarge`` before expanding anything larger than the trace allows."""
    from servesim.compact import expand_run

    found = oversize(run, trace_doc)
    if found is not None:
        raise RunTooLarge(found.detail)
    return expand_run(run)
