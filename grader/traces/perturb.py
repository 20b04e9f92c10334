"""A listed trace drawn again: its requests perturbed by a few seeded knobs.

    perturb_requests(requests, knobs, seed, where) -> requests   # a new list; the input is kept

A trace listed request by request (a construction: which request is cancelled while it waits,
which ones share a prefix in one step) cannot be drawn from a generator without losing what
it was built for. Its variant keeps every request, in the same order, with the same fields,
and moves each number a bounded way (``KNOBS``, each at its identity value by default)::

    arrivalScale   every gap between arrivals (the first one from 0 ms) times this factor
    arrivalJitter  each gap also times (1 + u), u uniform in [-j, j] (j < 1): ties stay ties,
                   and arrivals keep their order
    roundMs        arrivals rounded to this grid (0: not rounded); rounding keeps the order
    inputScale     each prompt's own tokens (those after its shared prefix) times this factor
    outputScale    outputTokens times this factor; a one-token output stays one (it never
                   decodes, a case a check may need) and no other becomes one
    lengthJitter   each scaled length also times (1 + u), u uniform in [-j, j], per request
    cancelScale    each cancelMs times this factor
    cancelJitter   each cancelMs also times (1 + u), u uniform in [-j, j]
    prefixScale    every prefix segment's tokens times this factor; a length that is a multiple
                   of prefixGrid stays one (a shared page stays a whole page)
    prefixGrid     see prefixScale (the device's page size)
    regroupShare   the share of the prefixed requests whose first segment (their group) is
                   drawn again among the trace's first segments: who shares with whom changes,
                   the number of groups does not
    idPrefix       request ids become this string plus each id's trailing digits (''=kept)
    keep           requests (numbered from 1) that keep every field but the id, and their gap
                   to the request before: a spec's ``{set: [...]}`` keeps in every draw the
                   requests a graded check is built on (when all before them are kept too,
                   their arrivals are the fixed ones, so the same steps happen)

Lengths are rounded to whole tokens and stay at least 1 where they were; a cancel stays > 0.
Each per-request draw comes from ``seed`` (``random.Random``), in one fixed order, so the same
seed and knobs give the same requests. The result is a trace's ``requests``: the caller
checks it with ``servesim.parse_trace`` (``grader.variants.drawn``).
"""

from __future__ import annotations

import copy
import random
import re

from .errors import SpecError

KNOBS = {
    "arrivalScale": 1.0,
    "arrivalJitter": 0.0,
    "roundMs": 0.25,
    "inputScale": 1.0,
    "outputScale": 1.0,
    "lengthJitter": 0.0,
    "cancelScale": 1.0,
    "cancelJitter": 0.0,
    "prefixScale": 1.0,
    "prefixGrid": 16,
    "regroupShare": 0.0,
    "idPrefix": "",
    "keep": [],
}
_FACTORS = ("arrivalScale", "inputScale", "outputScale", "cancelScale", "prefixScale")
_JITTERS = ("arrivalJitter", "lengthJitter", "cancelJitter")


def perturb_requests(requests: list[dict], knobs: dict, seed: int, where: str) -> list[dict]:
    """``requests`` as the knobs move them (see the module docstring)."""
    k = _checked({**KNOBS, **knobs}, where)
    rng = random.Random(seed)
    out = copy.deepcopy(requests)
    past = [n for n in k["keep"] if n > len(requests)]
    if past:
        raise SpecError(
            f"{where}: knob 'keep': request {past[0]} is past the {len(requests)} requests"
        )
    keep = {n - 1 for n in k["keep"]}
    _arrivals(out, k, rng, keep)
    groups = sorted({r["prefix"][0]["id"] for r in out if r.get("prefix")})
    for n, request in enumerate(out):
        # every draw is taken for a kept request too, so keeping one moves no other
        jitter = 1 + rng.uniform(-k["lengthJitter"], k["lengthJitter"])
        regroup = rng.random() < k["regroupShare"]
        group = rng.choice(groups) if groups else None
        cancel_u = rng.uniform(-k["cancelJitter"], k["cancelJitter"])
        if k["idPrefix"]:
            request["id"] = k["idPrefix"] + re.search(r"\d*$", request["id"]).group()
        if n in keep:
            continue
        prefix = request.get("prefix", ())
        own = request["inputTokens"] - sum(segment["tokens"] for segment in prefix)
        if prefix and regroup:
            prefix[0]["id"] = group
        for segment in prefix:
            segment["tokens"] = _prefix_length(segment["tokens"], k)
        shared = sum(segment["tokens"] for segment in prefix)
        request["inputTokens"] = shared + _length(own, k["inputScale"] * jitter)
        if request["outputTokens"] > 1:
            output = _length(request["outputTokens"], k["outputScale"] * jitter)
            request["outputTokens"] = max(2, output)
        if "cancelMs" in request:
            cancel = round(request["cancelMs"] * k["cancelScale"] * (1 + cancel_u), 2)
            request["cancelMs"] = max(cancel, 0.25)
    return out


def _arrivals(requests: list[dict], k: dict, rng: random.Random, keep: set[int]) -> None:
    """Each gap (but a kept request's) scaled and jittered, summed again from 0 ms and
    rounded: order and ties kept."""
    before, at, grid = 0.0, 0.0, k["roundMs"]
    for n, request in enumerate(requests):
        gap = request["arrivalMs"] - before
        before = request["arrivalMs"]
        factor = k["arrivalScale"] * (1 + rng.uniform(-k["arrivalJitter"], k["arrivalJitter"]))
        at += gap if n in keep else gap * factor
        request["arrivalMs"] = float(round(at / grid) * grid if grid > 0 else round(at, 6))


def _length(tokens: int, factor: float) -> int:
    """``tokens`` times ``factor``, whole, at least 1 unless it was 0."""
    return 0 if tokens == 0 else max(1, round(tokens * factor))


def _prefix_length(tokens: int, k: dict) -> int:
    grid = k["prefixGrid"]
    if tokens % grid == 0:
        return max(grid, round(tokens * k["prefixScale"] / grid) * grid)
    return _length(tokens, k["prefixScale"])


def _checked(k: dict, where: str) -> dict:
    """The knobs, each known and in its range; one ``SpecError`` naming the first that is not."""
    for name in k:
        if name not in KNOBS:
            raise SpecError(
                f"{where}: unknown perturbation knob '{name}' (knobs: {', '.join(KNOBS)})"
            )
    for name in _FACTORS:
        if not _number(k[name]) or k[name] <= 0:
            raise SpecError(f"{where}: knob '{name}' must be a number > 0")
    for name in _JITTERS:
        if not _number(k[name]) or not 0 <= k[name] < 1:
            raise SpecError(f"{where}: knob '{name}' must be a number in [0, 1)")
    if not _number(k["regroupShare"]) or not 0 <= k["regroupShare"] <= 1:
        raise SpecError(f"{where}: knob 'regroupShare' must be a number in [0, 1]")
    if not _number(k["roundMs"]) or k["roundMs"] < 0:
        raise SpecError(f"{where}: knob 'roundMs' must be a number >= 0")
    if (
        not isinstance(k["prefixGrid"], int)
        or isinstance(k["prefixGrid"], bool)
        or k["prefixGrid"] < 1
    ):
        raise SpecError(f"{where}: knob 'prefixGrid' must be an integer >= 1")
    keep = k["keep"]
    if not isinstance(keep, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in keep
    ):
        raise SpecError(f"{where}: knob 'keep' must be a list of request numbers >= 1")
    if not isinstance(k["idPrefix"], str):
        raise SpecError(f"{where}: knob 'idPrefix' must be a string")
    return k


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
