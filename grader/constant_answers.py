"""What an answer that ignores its run earns, judged across the set of script cases of one kind.

A script case's answer is compared with the reference's unit by unit (``casekinds``): each item
of a list answer, or the whole answer otherwise (a record, an enum name with its list, a
``Ratio``'s numbers). The *kind* of a case is the function it grades (``kind_of``: its script
and ``args.function``); every case of a kind answers with the same type. A *constant* is an
answer that gives one unit whatever the run: a list answer of that unit repeated, or that
whole answer. The constants a student can give without computing (``guessable``) are every
enum value or other name, ``None``, ``True``/``False``, empty, zero, and whatever is built of
those alone (a cause with no other causes, a ``Ratio`` of 0 / 0); and the most common
reference unit of the set, a value that occurs more than once among its units (a value that
occurs once is found only by computing it).

Over the graded cases of one kind, each weighted by its points::

    matched   M = the points-weighted share of the answers' units equal to the reference's
    baseline  B = the largest M a constant reaches

``B`` is exact, not estimated: a constant matches only the units equal to it, so the maximum
over every constant above is the maximum over the set's own reference units that are guessable
or repeated. A set with ``0 < M <= B`` and ``M < 1`` earns nothing (``grading.scoring.
constant_gate``), so no constant earns on any kind, by construction; a set whose reference
answers a constant can match entirely (``B == 1``) is a defect of the cases, which the tests
refuse for every unit.
"""

from __future__ import annotations

from collections.abc import Iterable

from .casekinds import answer_share, same_value


def kind_of(case) -> tuple[str, str]:
    """The kind of a script case: the script it runs and the function it grades."""
    return (str(case.script), str(case.args.get("function", "")))


def units(want) -> list:
    """The units an answer is compared by: a non-empty list's items, else the whole answer."""
    return list(want) if isinstance(want, list) and want else [want]


def shaped(constant, want):
    """The answer a constant gives where ``want`` is the reference: ``constant`` repeated for
    each item of a list answer, else ``constant`` itself."""
    return [constant] * len(want) if isinstance(want, list) and want else constant


def guessable(value) -> bool:
    """Whether ``value`` is built only of names, booleans, ``None``, zeros and empty lists and
    records: an answer anyone can write without reading a run."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, list):
        return all(guessable(v) for v in value)
    if isinstance(value, dict):
        return all(guessable(v) for v in value.values())
    return False


def candidates(wants: Iterable) -> list:
    """The reference units of a set that some constant can match: the guessable ones and those
    that occur more than once (each value once)."""
    pool = [u for want in wants for u in units(want)]
    out: list = []
    for unit in pool:
        if any(same_value(unit, seen) for seen in out):
            continue
        if guessable(unit) or sum(same_value(unit, other) for other in pool) > 1:
            out.append(unit)
    return out


def matched(shares: Iterable[tuple[float, float]]) -> float:
    """``M``: the points-weighted mean of (share, points) pairs (0 for no points)."""
    pairs = list(shares)
    total = sum(points for _, points in pairs)
    return sum(share * points for share, points in pairs) / total if total else 0.0


def baseline(wants: list[tuple[object, float]]) -> float:
    """``B``: the largest ``M`` any constant reaches on the set of (reference answer, points)."""
    best = 0.0
    for constant in candidates(want for want, _ in wants):
        reached = matched((answer_share(shaped(constant, w), w), p) for w, p in wants)
        best = max(best, reached)
    return best


def no_better_than_constant(got: float, base: float) -> bool:
    """Whether a set whose answers match ``got`` (something, not everything) is no better than
    the baseline ``base``, so that what it matched earns nothing."""
    return 0.0 < got < 1.0 and got <= base
