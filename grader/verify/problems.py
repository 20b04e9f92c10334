"""What verification reports, and the tolerances it compares numbers with.

A ``Problem`` is one finding of ``grader.verify``: ``INVALID_SCHEDULE`` when the timeline breaks
a device rule, ``INCONSISTENT_STATS`` when it is valid but a reported figure disagrees with it.
``Collector`` gathers them, keeping the first message per (kind, statistic) and counting the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

EPS_MS = 1e-6


class ProblemKind(Enum):
    INVALID_SCHEDULE = "invalid_schedule"
    INCONSISTENT_STATS = "inconsistent_stats"


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    message: str  # full detail (ids, times): for visible feedback and staff only
    statistic: str | None = None  # the field that disagrees, e.g. "ttftMs", "events[].endMs"
    at_ms: float | None = None

    def safe_text(self) -> str:
        """A description with no ids, times or counts (hidden-case feedback)."""
        if self.kind is ProblemKind.INCONSISTENT_STATS:
            return f"reported statistic {self.statistic} is inconsistent with the timeline"
        return f"the timeline breaks a device rule ({self.statistic or 'schedule'})"


def fmt_ms(value: float) -> str:
    return f"{value:.2f} ms"


def close_ms(a, b) -> bool:
    """Both None, or both finite non-bool numbers within ``EPS_MS`` of each other."""
    if type(a) is float and type(b) is float:  # the common case, the same rule
        return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= EPS_MS
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= EPS_MS


class Collector:
    """Keeps the first message per (kind, statistic) and counts the rest, so a run file with
    a million broken entries costs the same memory as one with a single broken entry."""

    def __init__(self):
        self._groups: dict[tuple, list] = {}  # (kind, statistic) -> [message, at_ms, count]

    def add(self, kind: ProblemKind, statistic: str, message: str, at_ms=None) -> None:
        group = self._groups.get((kind, statistic))
        if group is None:
            self._groups[(kind, statistic)] = [message, at_ms, 1]
        else:
            group[2] += 1

    def has(self, kind: ProblemKind) -> bool:
        return any(k == kind for k, _ in self._groups)

    def problems(self) -> list[Problem]:
        out = []
        for (kind, statistic), (first, at_ms, count) in self._groups.items():
            more = f" (and {count - 1} more like it)" if count > 1 else ""
            out.append(Problem(kind, first + more, statistic, at_ms))
        # invalid schedules first: they make the statistics meaningless
        out.sort(key=lambda p: p.kind is not ProblemKind.INVALID_SCHEDULE)
        return out


def same_value(got, want) -> bool:
    """``got`` has ``want``'s shape; strings, bools, ints equal exactly, floats by ``close_ms``."""
    if type(want) is float:
        return close_ms(got, want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(same_value, got, want))
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(same_value(got[k], want[k]) for k in want)
        )
    if isinstance(want, (str, bool)):
        return got == want
    if isinstance(want, int) and isinstance(got, int) and not isinstance(got, bool):
        return got == want
    return close_ms(got, want)


def show_value(value) -> str:
    """A short rendering of a reported value for a problem message."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return (
            "["
            + ", ".join(show_value(v) for v in value[:6])
            + (", ...]" if len(value) > 6 else "]")
        )
    return repr(value)
