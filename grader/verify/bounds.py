"""Every size bound of a run file, read from its JSON Schema, checked in one walk.

    first_over(schema, document, trace_doc) -> Oversize | None

The lab's ``schemas/run.schema.json`` (with its trace schema inlined) states a bound for every
array, string and open object of a run file. Standard keywords hold the fixed ones
(``maxItems``, ``maxLength``; an ``enum`` or ``const`` bounds a string by its longest value);
four keywords of ours, which JSON Schema validators ignore, hold the rest:

- ``x-maxItems: QUANTITY``: the items of every array at this place, counted together within one
  run entry (all the events' ``decode`` lists of a run, say), are at most QUANTITY of the trace;
- ``x-maxSum: QUANTITY``: the integers at this place, summed within one run entry, are at most
  QUANTITY (what a compact slice expands to);
- ``x-maxUndescribed: N``: what an object holds outside its ``properties`` (all of it, for a
  free-form object such as ``params``) is at most N, counting one per value and one per
  character of each key and string;
- ``x-countsPerItem: true`` (``runs``): each item of the array starts its own counts.

The quantities come from the case's own trace (``TraceBounds``), never from the run file:
``requests`` (its request count), ``outputs`` and ``prompts`` (its output and prompt tokens),
``recompute``, ``chunks``, ``steps`` and ``pageOps`` (derived below). The walk reads a length
before it reads the items, so a padded array is refused before one of its items is looked at;
it descends only where the schema describes the value, and stops at the first bound passed.
Types are not checked here: the schema validation that follows does that.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

RECOMPUTE_ALLOWANCE = 3

# What each quantity means, for the refusal's detail and the docs.
QUANTITIES = {
    "requests": "the trace's requests",
    "outputs": "the trace's output tokens",
    "prompts": "the trace's prompt tokens",
    "recompute": f"{RECOMPUTE_ALLOWANCE} x the trace's prompt and output tokens",
    "chunks": "prompt tokens + recompute allowance",
    "steps": "prompt and output tokens + recompute allowance",
    "pageOps": "2 x (steps + chunks)",
}


@dataclass(frozen=True)
class TraceBounds:
    """The most work any valid schedule of a trace needs, whatever the policy.

    - per request, one token time (and one ``pausedMs`` pause: a stream pauses only after an
      event it could not take) per output token; one decode entry per output token;
    - one prefill chunk per prefill position: the prompts, plus what preemptions drop and prefill
      again, allowed up to ``RECOMPUTE_ALLOWANCE`` times the trace's prompt and output positions
      (the reference recomputes at most a quarter of them); one preemption or swap per
      recomputed position;
    - one step per new position (a step holds at least one);
    - page changes (prefix caching): a page is taken for a computed position at most once per
      position and hit for a prefilled one at most once per chunk position; each is released at
      most once, so at most twice the takes and hits together.
    """

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

    def quantity(self, name: str) -> int:
        """The value of one of ``QUANTITIES`` for this trace."""
        if name == "requests":
            return len(self.outputs)
        if name == "outputs":
            return sum(self.outputs)
        if name == "pageOps":
            return 2 * (self.steps + self.chunks)
        if name in ("prompts", "recompute", "chunks", "steps"):
            return getattr(self, name)
        raise ValueError(f"unknown bound quantity {name!r} in the run schema")


@dataclass(frozen=True)
class Oversize:
    """The first bound a run file passes. ``public`` names the field only (it is shown for
    visible cases; hidden ones show a fixed note); ``detail`` adds the bound, never the count
    the file holds."""

    what: str  # the field by its schema path, e.g. runs[].requests[].pausedMs
    public: str
    detail: str


class _Over(Exception):
    def __init__(self, found: Oversize):
        self.found = found


def first_over(schema: dict, document, trace_doc: dict) -> Oversize | None:
    """The first field of ``document`` past its bound in ``schema`` (a run schema with its
    ``$ref``s inlined, as ``runschema.inlined_schema`` gives it), None when all are within."""
    walk = _Walk(TraceBounds.of(trace_doc))
    try:
        walk.value(schema, document, "")
    except _Over as over:
        return over.found
    return None


class _Walk:
    def __init__(self, bounds: TraceBounds):
        self.bounds = bounds
        self.totals: dict[str, int] = {}  # schema path -> items (or sum) so far in this run

    def value(self, node, value, path: str) -> None:
        if not isinstance(node, dict):
            return
        node = _branch(node, value)
        kind = type(value)
        if kind is list:
            self._array(node, value, path)
        elif kind is str:
            self._string(node, value, path)
        elif kind is dict:
            self._object(node, value, path)
        elif kind is int and "x-maxSum" in node:
            self._count(node["x-maxSum"], max(value, 0), path)

    def _array(self, node: dict, value: list, path: str) -> None:
        most = node.get("maxItems")
        if most is not None and len(value) > most:
            self._fixed(path, f"holds more than {most} items")
        if "x-maxItems" in node:
            self._count(node["x-maxItems"], len(value), path)
        prefix, rest = node.get("prefixItems", []), node.get("items")
        if not prefix and _inert(rest):
            return  # numbers and the like: nothing in an item has a bound to check
        if not prefix and _plain_string(rest):  # ids: one pass, no call per item
            longest = rest["maxLength"]
            if any(type(item) is str and len(item) > longest for item in value):
                self._fixed(f"{path}[]", f"is longer than {longest} characters")
            return
        own = node.get("x-countsPerItem") is True
        for n, item in enumerate(value):
            sub = prefix[n] if n < len(prefix) else rest
            if sub is None:
                break
            where = f"{path}[{n}]" if n < len(prefix) else f"{path}[]"
            if own:
                outer, self.totals = self.totals, {}
                self.value(sub, item, where)
                self.totals = outer
            else:
                self.value(sub, item, where)

    def _string(self, node: dict, value: str, path: str) -> None:
        most = node.get("maxLength")
        allowed = node.get("enum", []) + ([node["const"]] if "const" in node else [])
        if most is None and allowed:
            most = max((len(a) for a in allowed if isinstance(a, str)), default=0)
        if most is not None and len(value) > most:
            self._fixed(path, f"is longer than {most} characters")

    def _object(self, node: dict, value: dict, path: str) -> None:
        properties = node.get("properties", {})
        budget = node.get("x-maxUndescribed")
        used = 0
        for name, item in value.items():
            where = f"{path}.{name}" if path else name
            if name in properties:
                self.value(properties[name], item, where)
            elif node.get("additionalProperties") is False:
                continue  # a field the schema forbids: its check refuses the file; unread here
            elif budget is not None:
                used += _size(item, budget - used + 1) + len(name)
                if used > budget:
                    self._fixed(path or "top level", "holds more outside its fields than allowed")

    def _count(self, quantity: str, count: int, path: str) -> None:
        total = self.totals.get(path, 0) + count
        self.totals[path] = total
        most = self.bounds.quantity(quantity)
        if total > most:
            raise _Over(
                Oversize(
                    path,
                    f"the run file declares more work than its trace allows ({path})",
                    f"{path}: a run may hold at most {most} ({quantity}: {QUANTITIES[quantity]})",
                )
            )

    def _fixed(self, path: str, what: str) -> None:
        public = f"the run file's {path} is larger than its schema allows"
        raise _Over(Oversize(path, public, f"{path} {what}"))


_BOUNDED = {"maxItems", "maxLength", "enum", "const", "x-maxItems", "x-maxSum", "x-maxUndescribed"}
_INERT: dict[int, tuple[object, bool]] = {}  # id(schema node) -> (node, whether inert)


def _inert(node) -> bool:
    """Whether no value ``node`` describes can pass a bound: no bound keyword on it or below it
    (the schema is read once, so each node is decided once)."""
    found = _INERT.get(id(node))
    if found is None or found[0] is not node:
        found = _INERT[id(node)] = (node, _decide_inert(node))
    return found[1]


def _decide_inert(node) -> bool:
    if not isinstance(node, dict):
        return True
    if node.keys() & _BOUNDED:
        return False
    subs = [node.get("items"), node.get("then"), node.get("else"), *node.get("prefixItems", [])]
    subs += node.get("properties", {}).values()
    return all(_inert(sub) for sub in subs if sub is not None)


def _plain_string(node) -> bool:
    """A string whose one bound is its ``maxLength``."""
    plain = {"type", "maxLength", "minLength", "description"}
    return (
        isinstance(node, dict)
        and node.get("type") == "string"
        and node.keys() <= plain
        and "maxLength" in node
    )


def _branch(node: dict, value) -> dict:
    """The schema that applies to ``value`` where ``node`` picks one with ``if``/``then``/
    ``else`` on its type and required fields (the run schema's compact or full run)."""
    if "if" not in node:
        return node
    condition = node["if"]
    holds = isinstance(value, dict) and all(k in value for k in condition.get("required", []))
    return node.get("then" if holds else "else", node)


def _size(value, most: int) -> int:
    """One per JSON value plus one per character of each key and string; counting stops once
    it passes ``most``, so a huge value costs no more than a small one."""
    size, stack = 0, [value]
    while stack and size <= most:
        item = stack.pop()
        size += 1
        if type(item) is str:
            size += len(item)
        elif type(item) is list:
            taken = item[: most - size + 1]
            stack.extend(taken)
            size += len(item) - len(taken)  # the ones left out count one each
        elif type(item) is dict:
            taken = list(itertools.islice(item.items(), most - size + 1))
            size += sum(len(key) for key, _ in taken) + len(item) - len(taken)
            stack.extend(v for _, v in taken)
    return size
