"""The engine loop: the decision point, ask the policy for a batch, check it, run it, postprocess.

    decision point (the components' rules: arrivals, deadlines, client cancels, output buffers)
    -> schedule (policy) -> check -> run (device clock) -> postprocess (preempt, swap, tokens)

The policy only decides; the engine owns the clock and every sequence's state (``state.py``),
whose features are the components the device switches on (``components.py``). The device
rules (cost of a step, KV pages, caps, the token rule) are in ``rules.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import FrozenInstanceError, dataclass

from . import contract, decision, rules
from .arrivals import Arrivals, ClosedLoop
from .batch import Batch, PrefillChunk, Wait
from .batchcheck import _at, check_batch
from .contract import GUARD, PolicyError
from .device import DeviceProfile
from .sequence import Sequence
from .state import EngineState
from .trace import Trace
from .view import SchedulerView


@dataclass(slots=True)  # not frozen: one per step, and frozen fields are slow to set
class Event:
    """One submission as it ran: when, and what it held."""

    index: int
    start_ms: float
    end_ms: float
    work_ms: float
    batch: Batch
    prefill_from: tuple[int, ...]  # each chunk's first token index
    page_ops: list | None = None  # prefix cache's reference changes, else None
    marks: dict | None = None  # the run-file fields components own (``EngineState.marks``)


@dataclass(frozen=True)
class Timeline:
    sequences: tuple[Sequence, ...]  # trace order (creation order in a closed loop)
    events: tuple[Event, ...]
    trace: Trace | None = None  # the requests as replayed (closed loop: as generated)
    streams: dict | None = None  # id -> its output stream's record, or None

    @property
    def all_done_ms(self) -> float:
        return max(
            s.token_times_ms[-1] if s.token_times_ms else s.status_ms for s in self.sequences
        )


Policy = Callable[[SchedulerView], Batch | Wait]
Execute = Callable[[Batch, Mapping[str, int]], float]
Admit = Callable[[Sequence, SchedulerView], bool]


def simulate(
    trace: Trace | None,
    policy: Policy,
    device: DeviceProfile,
    execute: Execute | None = None,
    *,
    budget: int | None = None,
    queue_cap: int | None = None,
    admit: Admit | None = None,
    closed: ClosedLoop | None = None,
    name: str | None = None,
    source: Arrivals | None = None,
) -> Timeline:
    """Run ``policy`` until every request has completed, been rejected or been cancelled.

    The policy returns the next step (a ``Batch``) or a ``Wait``: no step now, the clock moves
    to the wait's time or the next arrival, whichever is first, and the policy is asked again.

    ``execute`` (optional) runs each checked batch somewhere real, given the batch and the
    cached positions of its requests, and returns its measured duration in ms (> 0); the clock
    then advances by that instead of by the device model. ``Event.work_ms`` keeps the model's
    figure. ``budget`` (B) is checked on every step; ``queue_cap``, ``admit`` and the device's
    page pool may reject a request at arrival; ``closed`` replaces the trace's arrivals.
    ``name``: the policy's function, which a broken contract's message names
    (``servesim.contract``). ``source``: where requests come from instead of ``trace`` (a live
    source: ``grader.serve``; see ``Arrivals``' hooks).
    """
    who = f"{name}()" if name else "the policy"
    arrivals = Arrivals(trace, closed) if source is None else source
    state = EngineState(device, arrivals, budget, queue_cap=queue_cap, admit=admit)
    needs_context = execute is not None or rules.reads_context(device)
    events: list[Event] = []
    clock, previous = 0.0, None
    own_device = _copy(device)  # what policies are given as view.device
    point = decision.hooks((state, *state.parts), state.rules)  # in their one order
    checks = state.hooks("check")  # the components' own refusals of a batch
    blockers, marking = state.hooks("blocks"), state.hooks("marks")  # (): none switched on

    while arrivals or state.live:
        view = state.view(clock, previous)
        handed = state.policy_view = _handed(view, own_device)  # the engine reads only ``view``
        decision.fire(point, clock, previous is not None)  # previous: a step just ended here
        if not state.live or (blockers and state.blocks()):
            clock, previous = arrivals.idle(clock, state.idle_until(clock)), None  # idle: jump
            continue

        batch = _ask(policy, handed, who)
        if type(batch) is Wait:  # idle on purpose until its time or the next arrival
            clock, previous = arrivals.idle(clock, _wake(batch, view, arrivals, state)), None
            continue
        step = _own(batch)  # what is checked, run and recorded: never the policy's object
        starts = check_batch(step, view, who=who, known=arrivals.ids)
        for check in checks:
            if (refused := check(step, view)) is not None:
                raise PolicyError(f"{who} returned a batch {_at(view)}: {refused}")
        context = step_context(step, state.live) if needs_context or step.moved else {}
        work = device.work_ms(step, context)
        if execute is None:
            end = clock + device.overhead_ms + work
        else:
            end = clock + execute(step, context)
        state.run_step(step, clock, end)
        marks = state.marks(step) if marking else None
        events.append(Event(len(events), clock, end, work, step, starts, state.page_ops(), marks))
        clock, previous = end, batch  # the policy's own batch: the engine never reads it back

    seqs = tuple(arrivals.sequences)
    records = state.streams and state.streams.records(seqs)  # None: streaming off
    return Timeline(seqs, tuple(events), arrivals.realised(trace, closed), records)


def _copy(frozen):
    """A copy of a frozen dataclass (no ``__post_init__``: its fields are already checked)."""
    copy = object.__new__(type(frozen))
    copy.__dict__.update(frozen.__dict__)
    return copy


def _own(batch):
    """The engine's copy of a returned ``Batch`` and its chunks, which it checks, runs and
    records: a batch the policy keeps and writes later is not read back. Else ``batch``."""
    if not isinstance(batch, Batch):
        return batch
    copy = object.__new__(Batch)
    copy.__dict__.update(batch.__dict__)
    chunks = batch.prefill  # empty on most steps; not a tuple: check_batch refuses it
    if chunks and type(chunks) is tuple:
        copy.__dict__["prefill"] = tuple([_copy(c) if isinstance(c, _CHUNK) else c for c in chunks])
    return copy


def _handed(view: SchedulerView, device: DeviceProfile) -> SchedulerView:
    """The view a policy is given: a copy of the engine's (writable all the same with
    ``object.__setattr__``) with ``device``, the run's one copy of the device. The engine reads
    only its own view and batches (``_own``): such writes change nothing of the run."""
    handed = object.__new__(SchedulerView)
    handed.__dict__.update(view.__dict__, device=device)
    return handed


def _ask(policy: Policy, view: SchedulerView, who: str) -> Batch | Wait:
    """``policy(view)`` while what the view holds refuses changes (``contract.GUARD``): a
    policy that changes its view is stopped, even if it catches the error. The engine's
    running totals, which the view reads, must be as they were after the call."""
    tally = view.tally
    kept = None if tally is None else (tally.active, tally.pages, tally.reserved, tally.host)
    pool = getattr(view, "pool", None)  # the prefix cache, if the device has one
    marked = None if pool is None else pool.mark()
    GUARD.start(who)
    try:
        batch = policy(view)
    except (FrozenInstanceError, TypeError, AttributeError) as exc:
        refused = contract.refused_write(who, exc)  # Python's own refusal of a write
        if refused is None:
            raise
        raise PolicyError(refused) from None
    finally:
        broken = GUARD.stop()
    if broken is not None:
        raise PolicyError(broken)
    if kept is not None and kept != (tally.active, tally.pages, tally.reserved, tally.host):
        raise PolicyError(contract.changed_view(who, "the engine's totals, view.tally"))
    if marked is not None and marked != pool.mark():
        raise PolicyError(contract.changed_view(who, "the prefix cache, view.pool"))
    return batch


def _wake(wait: Wait, view: SchedulerView, arrivals: Arrivals, state: EngineState) -> float:
    """When a ``Wait`` returned at ``view.now_ms`` ends: at its time, the next arrival or the
    next time a component must see (a paused stream resumes or stalls), whichever is first."""
    until = wait.until_ms
    if not isinstance(until, (int, float)) or isinstance(until, bool) or not until > view.now_ms:
        raise PolicyError(f"Wait({until!r}) {_at(view)}: it must wait until a later time")
    until = min(until, arrivals.next_ms()) if arrivals else float(until)
    return min(until, state.wait_stop())


def step_context(batch: Batch, live) -> dict[str, int]:
    """The cached positions of each request in ``batch`` and each it swaps (what calibrated
    costs and transfers read)."""
    return {rid: live[rid].context_tokens for rid in (*batch.ids, *batch.moved)}


_CHUNK = PrefillChunk


__all__ = ["ClosedLoop", "Event", "PolicyError", "SchedulerView", "Timeline", "rules", "simulate"]
