"""A run's recorded decisions, driven through the state machine (``state.EngineState``).

``Recorded`` is the engine loop with the policy replaced by what a run file says was decided:
each step's batch (decode, prefill chunks, preemptions, swaps) and, at each arrival, whether
the run rejected the request (an admission choice the rules allow). Between two steps it fires
the decision points the engine would (the components' rules in their one order: arrivals,
deadlines, client cancels, output buffers, and any registered rule), so everything the rules
decide by themselves (who is admitted or rejected by a cap, who leaves and when, which stream
pauses) is the state machine's. A batch goes through the engine's own checks
(``batchcheck.check_batch``, each component's ``check``, the device's limits) before it runs.

Its caller reads the state between steps and holds what it reads against the run; the trusted
replay (``grader/verify/replay.py``) does, naming each claim the rules refute.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from . import decision, rules
from .arrivals import Arrivals
from .batch import Batch, PrefillChunk
from .batchcheck import check_batch
from .contract import PolicyError
from .engine import step_context
from .state import EngineState
from .stretch import Stretches

Window = tuple[float, float] | None  # (after, until) while the device idles; None: a step end


class _Source(Arrivals):
    """A trace's arrivals; each request that leaves is told to ``left(seq)`` as it leaves."""

    def __init__(self, trace, left: Callable | None):
        super().__init__(trace)
        self.on_left = left

    def left(self, seq, at_ms: float) -> None:
        if self.on_left is not None:
            self.on_left(seq)


class Recorded:
    """``trace`` on ``device`` under ``budget`` and ``queue_cap``, the requests in ``rejected``
    refused at arrival, stepped by ``step``. ``left(seq)`` is called as each request leaves
    (completed, rejected or cancelled), while ``window`` says where the decision point lies.
    ``count_pages``: the state sums the pages held (``state.step_pages``) on a device without
    a page limit too (what the viewer draws), which no rule reads there."""

    def __init__(
        self, trace, device, *, budget=None, queue_cap=None, rejected=(), left=None,
        count_pages=False,
    ):  # fmt: skip
        self.device, self.rejected = device, frozenset(rejected)
        self.source = source = _Source(trace, left)
        self.state = state = EngineState(
            device, source, budget, queue_cap=queue_cap, admit=self._admits,
            count_pages=count_pages,
        )  # fmt: skip
        self.seqs = {seq.id: seq for seq in source.sequences}  # trace order
        self.point = decision.hooks((state, *state.parts), state.rules)
        self.part_checks = state.hooks("check")
        self.needs_context = rules.reads_context(device)
        self.stretches = Stretches(state)
        self.window: Window = (0.0, 0.0)
        self.previous: Batch | None = None

    def _admits(self, seq, view) -> bool:
        return seq.id not in self.rejected

    def fire(self, clock: float, window: Window) -> None:
        """One decision point at ``clock``: a step end (``window`` None), else while idling."""
        self.window = window
        decision.fire(self.point, clock, window is None)

    def gap(self, after: float, until: float) -> float | None:
        """Fire the decision points after the step end ``after`` and before the next step's
        start ``until`` (inf: after the last step): where an idle device's clock jumps (an
        arrival, a resume, a stall, a client cancel) or a policy's wait ends (an arrival, a
        resume, a stall). Returns when the engine would first have asked the policy for a step
        (None: nothing could run before ``until``, or nothing was left to arrive). The point at
        ``until`` itself is ``reach``'s."""
        if until <= after:  # the step starts where the last one ended: no point between
            return after
        state, source = self.state, self.source
        clock, due = after, None
        while True:
            if not state.live or state.blocks():
                wake = state.idle_until(clock)
                wake = math.inf if wake == clock else wake
                if due is None and wake >= until and not state.live and wake < math.inf:
                    due = wake
            else:
                due = clock if due is None else due
                wake = min(state.wait_stop(), source.next_ms() if source else math.inf)
            if not clock < wake < until:
                break
            self.fire(wake, (after, until))
            clock = wake
        return due

    def reach(self, after: float, until: float) -> None:
        """The decision point at the next step's start ``until`` after the step end ``after``
        (none when the step starts where the last one ended: that point has fired)."""
        if until > after:
            self.fire(until, (after, until))

    @staticmethod
    def batch_of(event: dict) -> Batch:
        """The batch a run file's event records, as the engine takes it."""
        return Batch(
            event["decode"],
            tuple(PrefillChunk(c["id"], c["tokens"], c.get("cached", 0)) for c in event["prefill"]),
            event.get("preempt", ()),
            event.get("swapOut", ()),
            event.get("swapIn", ()),
        )

    def work(self, batch: Batch) -> tuple[float, dict]:
        """The device time of ``batch`` now, without the overhead, and the cached positions
        it was priced with (what the engine passes ``work_ms``)."""
        moved = batch.moved
        context = step_context(batch, self.state.live) if self.needs_context or moved else {}
        return self.device.work_ms(batch, context), context

    def check(self, batch: Batch, start: float) -> tuple[str, str] | None:
        """``(rule, sentence)`` if the rules refuse ``batch`` at ``start`` before it runs (the
        engine's own checks, and a paused stream's), else None."""
        state = self.state
        view = state.view(start, self.previous)
        streams = state.streams
        try:
            if streams is not None and (paused := streams.violation(batch, start)):
                raise PolicyError(paused, "decode while paused")
            check_batch(batch, view, known=self.source.ids, limits=False)
            for check in self.part_checks:
                if (refused := check(batch, view)) is not None:
                    raise PolicyError(refused)
            return view.broken_limit(batch, trial=False)
        except PolicyError as exc:
            return _named(exc)

    def step(self, batch: Batch, start: float, end: float) -> tuple[str, str] | None:
        """Check ``batch``, run it from ``start`` to ``end`` and fire the decision point at its
        end; or, if the rules refuse it, ``(rule, sentence)`` (the state must not be stepped
        again)."""
        return self.check(batch, start) or self.apply(batch, start, end)

    def stretch(self, batch: Batch, start: float, ends, at: int, stop: int) -> Taken:
        """Steps ``at`` .. ``stop - 1`` all run ``batch``, the first from ``start``, each later
        one from the end before it (``ends``: every step's end, non-decreasing over them):
        check the first as ``step`` does, then run as many as the state allows at once
        (``stretch.Stretches``; at least one) and fire the decision point at the last end."""
        refused = self.check(batch, start)
        if refused is None:
            k = self.stretches.length(batch, ends, at, stop)
            if k < 2:
                return Taken(1, None, self.apply(batch, start, ends[at]))
            opens = self.stretches.run(batch, ends, at, k)
            self.previous = batch
            self.fire(ends[at + k - 1], None)
            return Taken(k, opens)
        return Taken(0, None, refused)

    def apply(self, batch: Batch, start: float, end: float) -> tuple[str, str] | None:
        """``step`` for a batch ``check`` passed: the prefix cache may still refuse it as it
        runs."""
        try:
            self.state.run_step(batch, start, end)
        except PolicyError as exc:
            return _named(exc)
        self.previous = batch
        self.fire(end, None)
        return None


class Taken(NamedTuple):
    """What ``Recorded.stretch`` ran: how many steps, the steps (1-based) at which a page
    opened if they ran as one stretch (None: one single step), or the rules' refusal."""

    steps: int
    opens: list[int] | None = None
    refused: tuple[str, str] | None = None


def _named(exc: PolicyError) -> tuple[str, str]:
    return exc.limit or "events[]", str(exc).removeprefix("batch: ")
