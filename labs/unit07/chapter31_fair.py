"""Chapter 31.6-31.7 worked numbers: fairness units, deficit credits, preemption cost, and the
statistics of 31.7 (request- vs token-weighted, open vs closed loop).

Loaded by ``chapter31.py`` (the notes-page plug-in). Parameters marked as assumptions on the page
are illustrative; every shown result is computed here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


def fairness_units(tokens_a=10, tokens_b=1000) -> dict:
    """Exercise 31.9: one request each per round vs the same number of tokens each per round."""
    per_round = tokens_b  # per-token fairness gives each tenant this many tokens a round
    return {
        "tokens_a": tokens_a,
        "tokens_b": tokens_b,
        "request_share_ratio": Fraction(tokens_b, tokens_a),
        "token_requests_a": per_round // tokens_a,
        "token_requests_b": per_round // tokens_b,
    }


def deficit_rounds(
    costs: dict[str, list[int]],
    quantum: int,
    rounds: int,
    cap: int | None,
    idle_earns: bool = True,
):
    """Deficit credits: each round a backlogged tenant gains ``quantum`` (capped at ``cap`` when
    given) and runs queued requests while its credit covers the head's cost. An idle tenant's
    credit grows too when ``idle_earns`` (the book leaves this open; the page states which).
    Returns the requests run per round and the tokens run per tenant."""
    credit = dict.fromkeys(costs, 0)
    queues = {t: list(q) for t, q in costs.items()}
    served = dict.fromkeys(costs, 0)
    log = []
    for _ in range(rounds):
        ran = []
        for tenant, queue in queues.items():
            if idle_earns or not (queue and queue[0] is None):
                credit[tenant] += quantum
            if cap is not None:
                credit[tenant] = min(credit[tenant], cap)
            while queue and queue[0] is not None and queue[0] <= credit[tenant]:
                credit[tenant] -= queue[0]
                served[tenant] += queue.pop(0)
                ran.append(tenant)
            if queue and queue[0] is None:  # idle this round
                queue.pop(0)
        log.append(ran)
    return log, served


def deficit_example(quantum=200, rounds=6) -> dict:
    fair = {"A": [300] * 20, "B": [100] * 40}
    log, served = deficit_rounds(fair, quantum, rounds, cap=None)
    idle = 10
    cost = 100  # every request of C and D
    late = {"C": [None] * idle + [cost] * 40, "D": [cost] * 80}
    _, uncapped_first = deficit_rounds(late, quantum, idle + 1, cap=None)
    _, capped_first = deficit_rounds(late, quantum, idle + 1, cap=2 * quantum)
    _, no_idle_credit = deficit_rounds(late, quantum, idle + 1, cap=None, idle_earns=False)
    return {
        "quantum": quantum,
        "rounds": rounds,
        "log": log,
        "served": served,
        "idle": idle,
        "burst_uncapped": uncapped_first["C"] // cost,
        "burst_capped": capped_first["C"] // cost,
        "burst_no_idle_credit": no_idle_credit["C"] // cost,
        "cost_c": cost,
        "cap": 2 * quantum,
    }


@dataclass(frozen=True)
class PreemptCost:
    """Recompute vs swap for a preempted sequence (31.6); all constants are assumptions."""

    bytes_per_token: int = 64 * 1024
    prefill_tokens_per_s: float = 20_000
    link_bytes_per_s: float = 25e9
    sync_ms: float = 2.0

    def recompute_ms(self, tokens: int) -> float:
        return 1000 * tokens / self.prefill_tokens_per_s

    def swap_ms(self, tokens: int) -> float:
        return 1000 * 2 * tokens * self.bytes_per_token / self.link_bytes_per_s + self.sync_ms

    def crossover_tokens(self) -> int:
        """Shortest sequence for which swapping is cheaper than recomputing."""
        per_token = self.recompute_ms(1) - (self.swap_ms(1) - self.sync_ms)
        return math.floor(self.sync_ms / per_token) + 1


def preempt_example(cost: PreemptCost = PreemptCost(), lengths=(16, 1024)) -> dict:
    rows = [
        {"tokens": n, "recompute_ms": cost.recompute_ms(n), "swap_ms": cost.swap_ms(n)}
        for n in lengths
    ]
    return {"cost": cost, "rows": rows, "crossover": cost.crossover_tokens()}


def weighted_stats(requests=((11, 20.0), (101, 50.0))) -> dict:
    """Request-weighted mean TPOT vs token-weighted mean ITL; each request is (tokens, ITL ms)."""
    tpot = [itl for _, itl in requests]
    gaps = [(n - 1, itl) for n, itl in requests]
    return {
        "requests": list(requests),
        "request_mean": sum(tpot) / len(tpot),
        "token_mean": sum(k * itl for k, itl in gaps) / sum(k for k, _ in gaps),
    }


def stall_example(itls=(10.0,) * 10 + (500.0,)) -> dict:
    """A single long pause hidden in a request's TPOT."""
    return {
        "count": len(itls),
        "base": min(itls),
        "tpot": sum(itls) / len(itls),
        "worst": max(itls),
    }


def _fifo(arrivals: list[float], service: float, stall: tuple[float, float]) -> list[float]:
    """Latencies of a one-at-a-time server that does nothing during ``stall`` = (start, end)."""
    free, out = 0.0, []
    for a in arrivals:
        start = max(a, free)
        if stall[0] <= start < stall[1]:
            start = stall[1]
        free = start + service
        out.append(free - a)
    return out


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def loop_example(period=20.0, service=10.0, horizon=3000.0, stall=(1000.0, 2000.0)) -> dict:
    """Open loop (one request every ``period`` ms, whatever happens) vs closed loop (one user
    who sends the next request ``period - service`` ms after each answer) on the same server."""
    opened = [i * period for i in range(int(horizon // period))]
    open_lat = _fifo(opened, service, stall)
    closed_lat, t = [], 0.0
    while t < horizon:
        (lat,) = _fifo([t], service, stall)
        closed_lat.append(lat)
        t += lat + (period - service)
    return {
        "period": period,
        "service": service,
        "horizon_s": horizon / 1000,
        "stall_s": (stall[1] - stall[0]) / 1000,
        "open_n": len(open_lat),
        "closed_n": len(closed_lat),
        "open_p50": _quantile(open_lat, 0.5),
        "open_p99": _quantile(open_lat, 0.99),
        "closed_p50": _quantile(closed_lat, 0.5),
        "closed_p99": _quantile(closed_lat, 0.99),
        "closed_max": max(closed_lat),
        "missing": len(open_lat) - len(closed_lat),
    }
