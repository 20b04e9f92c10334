"""What a feature of the device is: one ``Component``, switched on by the device profile (or
the run's limits), with the hooks the engine's state calls, the decision-point rules it adds,
the run-file fields it owns and its replay check.

A component's per-run state is a ``Part``, made by ``Component.part(state)`` when the
component is switched on. ``EngineState`` calls, for each hook, the parts that define it, in the
components' one order (``components.COMPONENTS``); a part leaves out the hooks it does not need
and a component that is off has no part, so neither costs a call. The hooks, by where they fire:

    arrival         refuses(seq) -> bool (reject at arrival), then arrive(seq)
    decision point  the component's ``rules`` (``decision.Rule``; the hook is a method of the
                    executor or of its part), in the components' order
    idle            blocks(live) -> bool, wait_stop() and idle_stop(): when a waiting or idle
                    device's clock must stop for the part
    step            check(batch, view) -> sentence or None (a batch the rule refuses), then
                    before_step(batch), [preempt], moves(batch), [prefill, decode],
                    settle(done), [finish], after_step(batch, end)
    release         release(seq): what ``seq`` held on the device is freed
    run file        marks(batch) -> the event's fields this component owns (``event_fields``)

The run viewer gives each step the marks of ``Component.view``. The replay check
(``Component.replay``) is given each event of a run file, the trace's
requests by id and the device, and returns a sentence for each claim of the event that the
rule refutes; the trusted replay names each as an invalid schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .decision import Rule

HOOKS = (
    "refuses",
    "arrive",
    "check",
    "before_step",
    "moves",
    "settle",
    "after_step",
    "release",
    "marks",
    "blocks",
    "wait_stop",
    "idle_stop",
)


class Part:
    """A switched-on component's state in one run; subclasses define only the hooks they need
    (``HOOKS``): a hook left out is never called. The engine's state is given to the part as a
    weak proxy, which the part may keep: the state holds its parts, and a run left with the
    cyclic collector off must free everything by reference counting.

    ``stretches`` True: its step hooks change and refuse nothing on a batch that only decodes
    running sequences, so such steps may be applied as a stretch (``stretch``); a part with a
    decision-point rule says until when that rule is quiet with ``quiet_until()``."""

    stretches = False


def _always(device, limits: Mapping) -> bool:
    return True


ReplayCheck = Callable[[dict, Mapping, object], Iterable[tuple[str, str]]]


@dataclass(frozen=True)
class Component:
    """One feature: its name, its switch, the decision-point rules it adds, how its per-run
    part is made (None: it adds rules only), the run-file fields it owns, its replay
    check (``(event, requests by id, device) -> (field, sentence) pairs``) and what the run
    viewer draws of it at each step (``(event, the run's requests by id) -> marks``, derived
    from the batch and the requests, never read back from the event's own claim)."""

    name: str
    switched_on: Callable[[object, Mapping], bool] = _always  # (device, run limits)
    rules: tuple[Rule, ...] = ()
    part: Callable[[object], Part] | None = None  # (engine state) -> its part
    event_fields: tuple[str, ...] = ()  # the run file's fields of each event it owns
    request_fields: tuple[str, ...] = ()  # ... and of each request
    replay: ReplayCheck | None = None
    view: Callable[[dict, Mapping], dict] | None = None  # (event, run requests by id) -> marks


def hooked(parts: Iterable[Part], hook: str) -> tuple:
    """The bound ``hook`` of each part that defines it, in order."""
    return tuple(getattr(part, hook) for part in parts if hasattr(part, hook))
