"""Offered load: ``--load open:RATE`` or ``--load closed:USERS:THINK_MS[:THINK]``.

Open loop: Poisson arrivals at RATE requests per second, fixed in advance, whatever the
server does (or, in a protocol file, bursty: the same mean rate, crowded into bursts). Closed
loop: USERS users, each sending its next request a think time after the previous one ended,
so arrivals slow down when the server does; the think time is THINK_MS exactly (``fixed``,
the default) or exponential with that mean (``exponential``). All draw request sizes
uniformly (seeded) from a trace's requests, keeping their extra fields (maxOutputTokens,
deadlineMs, tenant).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .arrivals import THINK_KINDS
from .trace import Trace, parse_trace


class LoadError(ValueError):
    """A ``--load`` value that cannot be used; the message says which part is wrong."""


@dataclass(frozen=True)
class OpenLoad:
    rate_per_s: float


@dataclass(frozen=True)
class ClosedLoad:
    users: int
    think_ms: float
    think: str = "fixed"  # or "exponential" (mean think_ms)


@dataclass(frozen=True)
class Burst:
    """Bursty open-loop arrivals: in every period of ``period_ms``, the first ``fraction`` of
    the time receives ``factor`` times the mean rate and the rest what is left of it (a
    Poisson process whose rate switches between the two; the mean rate is unchanged)."""

    factor: float  # > 1
    fraction: float  # in (0, 1), with factor * fraction <= 1
    period_ms: float

    def time_at(self, mass: float, rate_per_ms: float) -> float:
        """The time by which ``mass`` arrivals are expected (the inverse of the mean count)."""
        per_period = rate_per_ms * self.period_ms
        periods, left = divmod(mass, per_period)
        high = self.factor * rate_per_ms
        in_burst = high * self.fraction * self.period_ms
        if left < in_burst:
            offset = left / high
        else:
            low = rate_per_ms * (1 - self.factor * self.fraction) / (1 - self.fraction)
            offset = self.fraction * self.period_ms + (left - in_burst) / low
        return periods * self.period_ms + offset


def _number(text: str, what: str, integer: bool = False, allow_zero: bool = False):
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise LoadError(f"--load: {what} must be {kind}, got {text!r}") from None
    low_ok = value >= 0 if allow_zero else value > 0
    if not math.isfinite(value) or not low_ok:
        raise LoadError(f"--load: {what} must be {'>= 0' if allow_zero else '> 0'}, got {text}")
    return value


def parse_load(text: str) -> OpenLoad | ClosedLoad:
    kind, _, rest = text.partition(":")
    parts = rest.split(":") if rest else []
    if kind == "open" and len(parts) == 1:
        return OpenLoad(_number(parts[0], "RATE"))
    if kind == "closed" and len(parts) in (2, 3):
        users = _number(parts[0], "USERS", integer=True)
        think = parts[2] if len(parts) == 3 else "fixed"
        if think not in THINK_KINDS:
            raise LoadError(f"--load: THINK must be one of {', '.join(THINK_KINDS)}, got {think!r}")
        return ClosedLoad(users, _number(parts[1], "THINK_MS", allow_zero=True), think)
    raise LoadError(
        f"--load must be open:RATE or closed:USERS:THINK_MS[:fixed|exponential], got {text!r}"
    )


def open_loop(
    sizes: Trace, rate_per_s: float, requests: int, seed: int, burst: Burst | None = None
) -> Trace:
    """``requests`` Poisson arrivals at ``rate_per_s`` (bursty with ``burst``); sizes drawn
    from ``sizes``. The seed fixes both; request ids are ``o1`` ... ``o<requests>``."""
    rng = random.Random(seed)
    pool = sizes.raw["requests"]
    clock, mass, out = 0.0, 0.0, []
    for k in range(1, requests + 1):
        if burst is None:
            clock += rng.expovariate(rate_per_s / 1000.0)
        else:
            mass += rng.expovariate(1.0)
            clock = burst.time_at(mass, rate_per_s / 1000.0)
        item = dict(rng.choice(pool))
        item.update(id=f"o{k}", arrivalMs=round(clock, 3))
        out.append(item)
    shape = "Poisson" if burst is None else f"bursty (x{burst.factor:g})"
    doc = {
        "name": f"{sizes.name}-open-{rate_per_s:g}",
        "description": f"open loop: {shape} {rate_per_s:g} req/s, {requests} requests, "
        f"seed {seed}, sizes from {sizes.name}",
        "requests": out,
    }
    return parse_trace(doc, source=doc["name"])
