"""The real cache in step with the engine during a live run of unit 09 (``runner.run_live``).

In a live run the engine decides on the measured clock, so client cancels, paused streams and
their deadlines fall where the real durations put them. ``execute`` runs before the engine
applies a step, so the step's own page operations are computed first by the engine's own
code on a copy of its prefix cache (``BlockPool.apply_batch``, as the engine applies a step)
and done on the real cache; at the next step (or at the end) the engine's record of the step
(``Event.page_ops``) must begin with exactly those, and its releases that followed (finished
and cancelled requests) are done then. After each of them the real tables are checked against
the engine's own (``pageops.check``). Without a prefix cache a request that left without
finishing (a cancel, a stalled stream) is dropped from the real cache at the next step.
"""

from __future__ import annotations

from dataclasses import replace

from servesim import prefixcache

from . import pageops
from .kv_cache import PageTableError


class LivePages:
    def __init__(self, real, driven: bool):
        self.real = real
        self.driven = driven  # the device has a prefix cache: pages follow its operations
        self.view = None  # the engine's view at the last decision (its live map and pool)
        self.own: list | None = None  # the last step's own operations, as computed
        self.steps = 0

    def wrap(self, policy):
        """``policy``, keeping the view the engine hands it (read-only use)."""

        def kept(view, *args, **kwargs):
            self.view = view
            return policy(view, *args, **kwargs)

        return kept

    def execute(self, batch, context) -> float:
        """The engine's ``execute`` hook: catch up with the last step, then run this one."""
        pool = self.view.pool if self.driven else None
        self._catch_up(pool.log if pool is not None else None)
        if pool is not None:
            self.own = self._step_ops(pool, batch)
            pageops.apply(self.real.cache, self.own)
        measured = self.real.execute(batch, context)
        self.steps += 1
        return measured

    def finish(self, events) -> None:
        """After the run: the last step's releases; every page back."""
        self._catch_up(events[-1].page_ops if events and self.driven else None, last=True)

    def _step_ops(self, pool, batch) -> list:
        """The page operations ``batch`` will make, by the engine's own code on a copy."""
        dry = pool.copy()
        dry.log = []
        state = prefixcache.seq_state(self.view.live.__getitem__)
        dry.apply_batch(batch.decode, prefixcache.chunks_of(batch), batch.preempt, state)
        return dry.log

    def _catch_up(self, log, *, last: bool = False) -> None:
        cache, step = self.real.cache, self.steps - 1
        if self.steps == 0:
            return
        if self.driven:
            own = len(self.own)
            if [list(op) for op in log[:own]] != [list(op) for op in self.own]:
                raise PageTableError(f"step {step}: the engine's page operations differ")
            pageops.apply(cache, log[own:])
            engine = {} if last else self.view.pool.tables
            pageops.check(cache, {rid: tuple(n for n, _ in t) for rid, t in engine.items()}, step)
        live = {} if last else self.view.live
        for rid, state in list(self.real.executor.states.items()):
            if rid not in live and (state.prefilled or rid in cache.tables):
                self.real.executor.drop(rid)  # left without finishing: cancelled or stalled
        self.real.submissions[-1] = replace(self.real.submissions[-1], pages_held=cache.pool.used)
