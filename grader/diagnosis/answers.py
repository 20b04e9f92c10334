"""Checks on the answers of a script case (``measure.py``): the kind of a measuring mistake.

Each check reads the submission's answers (``got``, already parsed with bounded numbers), the
reference's (``want``), the run they were computed from (the reference's run of the case: the
requests' arrivals, departures, statuses and token times) and the case's ``args`` (windows,
SLO), and says whether the answers are wrong in its way. Answers that do not have the
reference's shape match no check. ``describe`` is the fallback: which fields, or which kind of
item, differ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..casekinds import same_value

NEAR = 1e-6  # relative: "close to" a factor


@dataclass(frozen=True)
class AnswerPair:
    got: object
    want: object
    requests: list[dict]
    args: dict
    params: dict = field(default_factory=dict)

    def items(self) -> list[tuple[object, object, int]]:
        """(got, want, index) of the list items that differ; [] when the shapes differ."""
        if not isinstance(self.got, list) or not isinstance(self.want, list):
            return []
        if len(self.got) != len(self.want):
            return []
        return [
            (g, w, n)
            for n, (g, w) in enumerate(zip(self.got, self.want, strict=True))
            if not same_value(g, w)
        ]

    def windows(self) -> list:
        return list(self.args.get("windows", []))


CHECKS: dict[str, Callable[[AnswerPair], bool]] = {}


def check(name: str):
    def register(function):
        CHECKS[name] = function
        return function

    return register


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= NEAR * max(1.0, abs(b))


@check("field-off-by-factor")
def field_off_by_factor(pair: AnswerPair) -> bool:
    """In every differing window, ``field`` equals the reference's times ``a / b`` (two count
    fields of the reference's answer), and only ``field`` differs."""
    name, (a, b) = pair.params["field"], pair.params["factor"]
    wrong = pair.items()
    if not wrong:
        return False
    for got, want, _ in wrong:
        if not isinstance(got, dict) or not isinstance(want, dict) or set(got) != set(want):
            return False
        others = [k for k in want if k != name and not same_value(got[k], want[k])]
        if others or not _number(got[name]) or not _number(want[name]) or not want[b]:
            return False
        if not _close(got[name], want[name] * want[a] / want[b]):
            return False
    return True


def _in_window(requests: list[dict], key: str, window) -> list[dict]:
    start, end = window
    return [r for r in requests if start <= r[key] < end]


@check("count-leaves-out")
def count_leaves_out(pair: AnswerPair) -> bool:
    """``field`` (a count per window) equals the requests of the window whose status is not
    one of ``statuses``: those were left out of the count."""
    name, left_out = pair.params["field"], set(pair.params["statuses"])
    wrong = pair.items()
    if not wrong:
        return False
    for got, _, n in wrong:
        window = _in_window(pair.requests, "arrivalMs", pair.windows()[n])
        kept = sum(1 for r in window if r.get("status", "completed") not in left_out)
        if not isinstance(got, dict) or got.get(name) != kept:
            return False
    return True


@check("window-by-departure")
def window_by_departure(pair: AnswerPair) -> bool:
    """``field`` counts the requests that left in the window, not those that arrived in it."""
    name = pair.params["field"]
    wrong = pair.items()
    if not wrong:
        return False
    for got, _, n in wrong:
        by_exit = len(_in_window(pair.requests, "statusMs", pair.windows()[n]))
        if not isinstance(got, dict) or got.get(name) != by_exit:
            return False
    return True


def _one_token(request: dict) -> bool:
    return len(request.get("tokenTimesMs") or []) == 1


def _not_completed(request: dict) -> bool:
    return request.get("status", "completed") != "completed"


WHERE = {"one-token": _one_token, "not-completed": _not_completed}


@check("wrong-only-where")
def wrong_only_where(pair: AnswerPair) -> bool:
    """Per-request answers that are wrong exactly on requests of one kind (``where``)."""
    wrong = pair.items()
    if not wrong or len(pair.got) != len(pair.requests):
        return False
    kind = WHERE[pair.params["where"]]
    return all(kind(pair.requests[n]) for _, _, n in wrong)


def _cuts(requests: list[dict], window) -> bool:
    """Whether some request's residence [arrival, departure) crosses an edge of ``window``."""
    start, end = window
    return any(
        r["arrivalMs"] < start < r["statusMs"] or r["arrivalMs"] < end < r["statusMs"]
        for r in requests
    )


@check("too-large-where-cut")
def too_large_where_cut(pair: AnswerPair) -> bool:
    """Per-window totals too large exactly in windows that cut a residence: not clipped."""
    wrong = pair.items()
    if not wrong:
        return False
    windows = pair.windows()
    for got, want, n in wrong:
        if not (_number(got) and _number(want)) or got <= want:
            return False
        if not _cuts(pair.requests, windows[n]):
            return False
    return True


@check("pair-equal")
def pair_equal(pair: AnswerPair) -> bool:
    """A pair answer whose two values are equal where the reference's differ (one weighting
    reported twice)."""
    got, want = pair.got, pair.want
    if not (isinstance(got, list) and isinstance(want, list) and len(got) == len(want) == 2):
        return False
    return same_value(got[0], got[1]) and not same_value(want[0], want[1])


@check("first-too-low")
def first_too_low(pair: AnswerPair) -> bool:
    """A pair answer whose first value is below the reference's and whose second is right."""
    got, want = pair.got, pair.want
    if not (isinstance(got, list) and isinstance(want, list) and len(got) == len(want) == 2):
        return False
    if not (_number(got[0]) and _number(want[0])):
        return False
    return got[0] < want[0] and same_value(got[1], want[1])


@check("only-field-differs")
def only_field_differs(pair: AnswerPair) -> bool:
    """A record answer (or every differing item of a list of them) that differs from the
    reference's in ``field`` alone."""
    name = pair.params["field"]
    wrong = pair.items() or (
        [(pair.got, pair.want, 0)] if not same_value(pair.got, pair.want) else []
    )
    if not wrong:
        return False
    for got, want, _ in wrong:
        if not isinstance(got, dict) or not isinstance(want, dict) or set(got) != set(want):
            return False
        if [k for k in want if not same_value(got[k], want[k])] != [name]:
            return False
    return True


def describe(pair: AnswerPair) -> str:
    """A fixed phrase for what differs (field names are the answer's own, public names)."""
    wrong = pair.items()
    if isinstance(pair.got, dict) and isinstance(pair.want, dict):
        wrong = [(pair.got, pair.want, 0)]
    fields = sorted(
        {
            key
            for got, want, _ in wrong
            if isinstance(got, dict) and isinstance(want, dict)
            for key in want
            if key in got and not same_value(got[key], want[key])
        }
    )
    if fields:
        names = ", ".join(fields)
        if isinstance(pair.want, dict):
            verb = "differs" if len(fields) == 1 else "differ"
            return f"the answer's {names} {verb} from the reference's"
        return f"in some per-request or per-window answers, {names} differ from the reference's"
    if wrong and isinstance(pair.got, dict):
        return "the answer's fields are not the reference's"
    if wrong:
        return "some per-request or per-window answers differ from the reference's"
    return "the answer does not have the reference's shape or values"
