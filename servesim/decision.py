"""The decision point: the rules that fire whenever the clock stops where a step may start, in
the one order that every driver of the state machine applies them (the engine; a run file's
recorded decisions, ``recorded``, which the grader's replay drives).

    arrivals (admit or reject) -> deadlines (at a step end only) -> client cancels
    -> output buffers (resume, stall, pause; on a streaming device)

Then, if nothing can run (nothing live, or every live request a paused stream), the device
idles: the clock jumps to the next arrival, resume, stall or client cancel, a decision point
again. A rule that fires earlier in the list sees nothing of a later one at the same point: an
arrival due exactly at a step end is admitted before deadlines pass, and a request whose
client cancels at the point a paused stream would resume or stall leaves as cancelled by its
client, so the stream rule finds it gone.

Each rule is one ``Rule``: the hook an executor implements (``DecisionPoint``) and whether it
fires at every decision point or only at a step end. The rules belong to the device's
components, and their order is the components' order (``components.decision_rules``). An
executor binds its hooks once per run (``hooks``) and fires them with ``fire`` at each decision
point; neither restates the order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class DecisionPoint(Protocol):
    """What an executor implements, one method per rule; each applies its rule at ``clock``."""

    def admit_due(self, clock: float) -> None:
        """Every request due by ``clock`` is admitted or rejected, in arrival order (ties in
        trace order)."""

    def expire_deadlines(self, clock: float) -> None:
        """At a step end: a live request past its deadline without a first token is cancelled."""

    def cancel_clients(self, clock: float) -> None:
        """A live request whose client cancelled by ``clock`` is cancelled (leaving is terminal)."""

    def update_streams(self, clock: float) -> None:
        """Paused streams resume or stall; buffers filled by the last step pause."""


@dataclass(frozen=True)
class Rule:
    """One rule of the decision point: its name, the hook that applies it, and when it fires.
    Each belongs to one component (``components.COMPONENTS``), whose switch turns it on."""

    name: str
    hook: str  # the ``DecisionPoint`` method that applies it
    step_end_only: bool = False  # fires only where a step has just ended


Hooks = tuple[tuple[Callable[[float], None], bool], ...]


def hooks(executors: tuple, rules: tuple[Rule, ...]) -> Hooks:
    """The hooks of ``rules`` (``components.decision_rules(device)``: those the device switches
    on, in their order), each bound to the first of ``executors`` that defines it (the state,
    then its components' parts: ``engine.simulate`` and ``recorded.Recorded`` bind the same),
    with whether it fires only at a step end. Bound once per run: firing them costs no
    look-up."""
    return tuple((_bound(executors, rule.hook), rule.step_end_only) for rule in rules)


def quiet(executors: tuple, rules: tuple[Rule, ...]) -> tuple[Callable[[], float], ...] | None:
    """The ``quiet_until`` of each executor that applies one of ``rules`` (bound as ``hooks``
    binds them): none of its rules does anything at a decision point before that time. None
    when one of them cannot say: then no stretch of steps may pass over a decision point
    (``stretch``)."""
    found: list = []
    for rule in rules:
        executor = next((e for e in executors if hasattr(e, rule.hook)), None)
        until = getattr(executor, "quiet_until", None)
        if until is None:
            return None
        if until not in found:
            found.append(until)
    return tuple(found)


def _bound(executors: tuple, hook: str) -> Callable[[float], None]:
    for executor in executors:
        if hasattr(executor, hook):
            return getattr(executor, hook)
    raise AttributeError(f"no executor applies the decision-point rule {hook!r}")


def fire(bound: Hooks, clock: float, step_end: bool) -> None:
    """Apply every rule of ``bound`` at the decision point ``clock``, in order; ``step_end``:
    a step has just ended here (else the device idled to it, or the run starts)."""
    for hook, step_end_only in bound:
        if step_end or not step_end_only:
            hook(clock)
