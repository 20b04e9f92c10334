"""Mutant: paged treats preempted requests as appended to the back of the waiting queue (behind
every request that never started, the earliest victim first) instead of put at its front.
"""

from dataclasses import replace

_paged = paged  # noqa: F821


def paged(view, budget):
    victims = [s for s in view.waiting if s.started and not s.holds_kv]
    others = [s for s in view.waiting if not (s.started and not s.holds_kv)]
    return _paged(replace(view, waiting=tuple(others + victims[::-1])), budget)
