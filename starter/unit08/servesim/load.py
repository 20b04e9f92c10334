"""Offered load (unit 08): ``--load open:RATE`` or ``--load closed:USERS:THINK_MS``.

Open loop: Poisson arrivals at RATE requests per second, fixed in advance, whatever the
server does. Closed loop: USERS users, each sending its next request THINK_MS after the
previous one ended, so arrivals slow down when the server does. Both draw request sizes
uniformly (seeded) from a trace's requests, keeping their extra fields (maxOutputTokens,
deadlineMs, tenant).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

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
    if kind == "closed" and len(parts) == 2:
        users = _number(parts[0], "USERS", integer=True)
        return ClosedLoad(users, _number(parts[1], "THINK_MS", allow_zero=True))
    raise LoadError(f"--load must be open:RATE or closed:USERS:THINK_MS, got {text!r}")


def open_loop(sizes: Trace, rate_per_s: float, requests: int, seed: int) -> Trace:
    """``requests`` Poisson arrivals at ``rate_per_s``; sizes drawn from ``sizes`` (seeded)."""
    rng = random.Random(seed)
    pool = sizes.raw["requests"]
    clock, out = 0.0, []
    for k in range(1, requests + 1):
        clock += rng.expovariate(rate_per_s / 1000.0)
        item = dict(rng.choice(pool))
        item.update(id=f"o{k}", arrivalMs=round(clock, 3))
        out.append(item)
    doc = {
        "name": f"{sizes.name}-open-{rate_per_s:g}",
        "description": f"open loop: Poisson {rate_per_s:g} req/s, {requests} requests, "
        f"seed {seed}, sizes from {sizes.name}",
        "requests": out,
    }
    return parse_trace(doc, source=doc["name"])
