"""Kinds of claim a lesson sentence makes with its words, each read and checked.

The ``claim`` filter (:mod:`.claims`) checks a condition the template computes; it cannot tell
whether the sentence beside it says that condition. The kinds here read the sentence itself:
each finds the words that make its kind of claim and checks them against what a run or the book
computes. A template wraps the sentence in ``{% filter kind("steps", ...) %}…{% endfilter %}``;
a sentence whose words say something else than the figures stops the build, and so does one
that holds none of the kind's words (the check would read nothing).

- ``steps``: 不到一步 / 正好一步 / N 步 against a time difference and the step length;
- ``bound``: 至少 / 不少于 (a lower bound), 至多 / 不超过 (an upper one) and 只是 / 只有 / 仅
  (which read as "no more than") against the direction the bound was computed in;
- ``shape``: 平台 / 持平 / 不变, 上升 / 增长, 下降 / 回落 against a curve's points over an interval;
- ``sharing``: 只存一份 / 只计一次 against 仍然占着 / 不是页 / 各占一份, against the peak of
  distinct pages held and the peak of page-table entries (a shared page is one page, several
  entries);
- ``doing``: the requests a sentence names as decoding and prefilling at a time against the run's
  event in progress then;
- ``constant``: a figure quoted in a sentence against every device of the page it is computed on:
  where it does not hold on all of them, the sentence names each device it holds on.

Each checker returns ``(holds, what the text says)``; :meth:`.claims.ClaimLog.kind` turns it
into a checked span or a :class:`BuildError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from servesim.htmlsafe import words

from .claims import BuildError

_ZH_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8}


def plain(text) -> str:
    """The words of ``text`` (markup removed, spaces collapsed)."""
    return words(text)


def _found(text: str, words: Iterable[str]) -> list[str]:
    return [w for w in words if w in text]


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _ZH_NUMBERS[word]


_STEP = re.compile(
    r"(?<!第)(?<!第 )(不到|正好|恰好|整整|早|晚|差)?\s*(\d+|[一两二三四五六七八])\s*(?:个)?\s*步"
)  # not an ordinal (第 3 步)


def steps(text, diff_ms: float, step_ms: float) -> tuple[bool, str]:
    """The step count the text gives a time difference: 不到 N 步 (0 < diff < N steps), or N 步
    (exactly N steps, whatever the word before it)."""
    words = plain(text)
    hits = _STEP.findall(words)
    if not hits:
        raise BuildError(f"a step-count claim names no step count: {words!r}")
    ok = True
    for qualifier, number in hits:
        n = _count(number)
        if qualifier == "不到":
            ok &= 0 < diff_ms < n * step_ms - 1e-9 * step_ms
        else:
            ok &= abs(diff_ms - n * step_ms) <= 1e-9 * step_ms
    said = ", ".join(q + n + " 步" for q, n in hits)
    return ok, f"{said} (the difference is {diff_ms:g} ms, a step {step_ms:g} ms)"


LOWER = ("至少", "不少于", "不低于", "下界", "以上")
UPPER = ("至多", "不超过", "不高于", "上界", "以内")
ONLY = ("只是", "只有", "仅")  # "no more than": an upper reading


def bound(text, direction: str) -> tuple[bool, str]:
    """The direction the text gives a bound (``lower``: the true value is at least the figure;
    ``upper``: at most) against the ``direction`` it was computed in."""
    if direction not in ("lower", "upper"):
        raise BuildError(f"a bound claim's direction is 'lower' or 'upper', not {direction!r}")
    words = plain(text)
    lower, upper = _found(words, LOWER), _found(words, UPPER + ONLY)
    if not lower and not upper:
        raise BuildError(f"a bound claim says neither 'at least' nor 'at most': {words!r}")
    ok = bool(lower) and not upper if direction == "lower" else bool(upper) and not lower
    return ok, f"{'/'.join(lower + upper)} for a {direction} bound"


FLAT, RISE, FALL = (
    ("平台", "持平", "不变", "水平段"),
    ("上升", "增长", "升高"),
    ("下降", "回落", "降低"),
)


def _shape_of(points: list[tuple[float, float]], tolerance: float) -> str:
    ys = [y for _, y in points]
    deltas = [b - a for a, b in zip(ys, ys[1:])]
    if all(abs(d) <= tolerance for d in deltas):
        return "flat"
    if all(d >= -tolerance for d in deltas):
        return "rise"
    if all(d <= tolerance for d in deltas):
        return "fall"
    return "up and down"


def shape(text, points, x0: float, x1: float, tolerance: float = 1e-9) -> tuple[bool, str]:
    """The shape the text gives a curve between ``x0`` and ``x1`` (both included) against the
    curve's ``points`` (x, y) there: every shape word in the text names the shape."""
    inside = [(x, y) for x, y in points if x0 <= x <= x1]
    if len(inside) < 2:
        raise BuildError(f"a shape claim's interval [{x0:g}, {x1:g}] holds fewer than 2 points")
    actual = _shape_of(inside, tolerance)
    words = plain(text)
    said = {name for name, group in (("flat", FLAT), ("rise", RISE), ("fall", FALL))
            if _found(words, group)}  # fmt: skip
    if not said:
        raise BuildError(f"a shape claim names no shape: {words!r}")
    return said == {actual}, f"{'/'.join(sorted(said))} where the curve is {actual}"


ONCE = ("只存一份", "只计一次", "只算一次", "不多占")
EXTRA = ("仍然占着", "不是页", "各占一份", "各存一份")


def sharing(text, distinct_pages: int, entries: int) -> tuple[bool, str]:
    """Whether the text says a shared page is stored once (``ONCE``) or once per holder
    (``EXTRA``), against the peak of distinct pages held and the peak of page-table entries:
    a page is stored once where fewer pages than entries are held."""
    words = plain(text)
    once, extra = _found(words, ONCE), _found(words, EXTRA)
    if bool(once) == bool(extra):
        raise BuildError(f"a sharing claim says both or neither of once / per holder: {words!r}")
    shared = distinct_pages < entries
    return (shared if once else not shared), (
        f"{'/'.join(once + extra)}: {distinct_pages} distinct pages for {entries} entries at peak"
    )


def pages_held(events: Iterable[Mapping]) -> tuple[int, int]:
    """Peak distinct pages held and peak page-table entries over a run's ``pageOps``: each
    ``take`` or ``hit`` adds an entry, each ``release`` removes one; a page is held while it has
    an entry."""
    entries: dict[tuple[int, int], int] = {}  # (page, generation) -> entries
    peak_pages = peak_entries = 0
    for event in events:
        for op, _rid, number, generation, *_ in event.get("pageOps") or ():
            key = (number, generation)
            if op in ("take", "hit"):
                entries[key] = entries.get(key, 0) + 1
            elif op == "release":
                entries[key] -= 1
                if not entries[key]:
                    del entries[key]
            peak_pages = max(peak_pages, len(entries))
            peak_entries = max(peak_entries, sum(entries.values()))
    return peak_pages, peak_entries


def doing(text, events, at_ms: float, decode=(), prefill=()) -> tuple[bool, str]:
    """Who the text says decodes and who prefills at ``at_ms`` against the run's event in
    progress then (start <= at_ms < end; none: nobody does anything). Each named id must be in
    the text."""
    words = plain(text)
    missing = [rid for rid in (*decode, *prefill) if rid not in words]
    if missing:
        raise BuildError(f"a who-does-what claim names {missing} but its text does not: {words!r}")
    event = next((e for e in events if e["startMs"] <= at_ms < e["endMs"]), None)
    ran_decode = set(event["decode"]) if event else set()
    ran_prefill = {c["id"] for c in event["prefill"]} if event else set()
    ok = ran_decode == set(decode) and ran_prefill == set(prefill)
    return ok, (
        f"at {at_ms:g} ms decode {sorted(decode)}, prefill {sorted(prefill)}; the run: decode "
        f"{sorted(ran_decode)}, prefill {sorted(ran_prefill)}"
    )


def constant(text, value: float, by_device: Mapping[str, float], digits: int = 2):
    """A figure and the devices of the page it is computed on (name as the page writes it ->
    value there): where the figure does not hold on every one, the text names each device it
    holds on and none it fails on."""
    words = plain(text)
    holds = [name for name, v in by_device.items() if round(v, digits) == round(value, digits)]
    fails = [name for name in by_device if name not in holds]
    if not fails:
        return bool(holds), f"{value:g} on every device ({', '.join(by_device)})"
    ok = bool(holds) and all(n in words for n in holds) and not any(n in words for n in fails)
    return ok, f"{value:g} holds on {holds}, not on {fails}; the text names " + str(
        [n for n in by_device if n in words]
    )


KINDS: dict[str, Callable[..., tuple[bool, str]]] = {
    "steps": steps,
    "bound": bound,
    "shape": shape,
    "sharing": sharing,
    "doing": doing,
    "constant": constant,
}
