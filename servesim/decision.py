"""The decision point: the rules that fire whenever the clock stops where a step may start, in
the one order that the engine and the grader's replay both apply them.

    arrivals (admit or reject) -> deadlines (at a step end only) -> client cancels
    -> output buffers (resume, stall, pause; on a streaming device)

Then, if nothing can run (nothing live, or every live request a paused stream), the device
idles: the clock jumps to the next arrival, resume, stall or client cancel, a decision point
again. A rule that fires earlier in the list sees nothing of a later one at the same point: an
arrival due exactly at a step end is admitted before deadlines pass, and a request whose
client cancels at the point a paused stream would resume or stall leaves as cancelled by its
client, so the stream rule finds it gone.

Each rule is one ``Rule``: the hook an executor implements (``DecisionPoint``), whether it
fires at every decision point or only at a step end, and the device switch that turns it on.
An executor asks ``hooks(executor, device)`` once per run for its bound hooks in this order
and fires them with ``fire`` at each decision point; neither restates the order.
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


def _always(device) -> bool:
    return True


def _streaming(device) -> bool:
    return device.stream_buffer_bytes is not None


@dataclass(frozen=True)
class Rule:
    """One rule of the decision point: its name, the executor's hook, when it fires, and the
    device switch that turns it on."""

    name: str
    hook: str  # the ``DecisionPoint`` method that applies it
    step_end_only: bool = False  # fires only where a step has just ended
    switched_on: Callable[[object], bool] = _always


RULES: tuple[Rule, ...] = (
    Rule("arrivals", "admit_due"),
    Rule("deadlines", "expire_deadlines", step_end_only=True),
    Rule("client cancels", "cancel_clients"),
    Rule("output buffers", "update_streams", switched_on=_streaming),
)

Hooks = tuple[tuple[Callable[[float], None], bool], ...]


def hooks(executor: DecisionPoint, device) -> Hooks:
    """The executor's hooks of the rules ``device`` switches on, in ``RULES`` order, each with
    whether it fires only at a step end. Bound once per run: firing them costs no look-up."""
    return tuple(
        (getattr(executor, rule.hook), rule.step_end_only)
        for rule in RULES
        if rule.switched_on(device)
    )


def fire(bound: Hooks, clock: float, step_end: bool) -> None:
    """Apply every rule of ``bound`` at the decision point ``clock``, in order; ``step_end``:
    a step has just ended here (else the device idled to it, or the run starts)."""
    for hook, step_end_only in bound:
        if step_end or not step_end_only:
            hook(clock)
