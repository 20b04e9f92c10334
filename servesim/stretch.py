"""A stretch: k identical decode-only steps applied at once, giving exactly the state that k
single steps (``EngineState.run_step``, each followed by its decision point) give.

A stretch is one batch that only decodes, run k times back to back: its first step starts where
the caller says, each later one where the one before ended, step j ends at ``ends[at + j - 1]``
(non-decreasing). Such steps change nothing but the members' decode counts, token times and
pages, and the state's count of changes, as long as

- no member emits its last token before the last step (the last step is a single step's
  work, ``EngineState.run_step``: its finishes leave as after any step);
- the page pool's limit holds after every step (each decode's page: ``rules.page_opens``);
- every decision point inside the stretch (the ends of steps 1 .. k - 1) is quiet: each
  switched-on rule's executor says until when it does nothing (``quiet_until``: the next
  arrival, deadline or client cancel), and a rule whose executor cannot say allows no stretch;
- every switched-on part with step hooks says they do nothing on such a batch
  (``stretches = True``: swap's moves); the prefix cache's page changes and the output
  buffers' tokens do something, so a device with either has no stretches.

``length`` finds the largest such k from the state; ``run`` applies it. The first step's own
checks (``recorded.Recorded.check``) and the decision point at the stretch's last end are the
caller's, as for a single step: the page bound above is the only check that changes inside.
"""

from __future__ import annotations

import bisect
import math

from . import decision, rules
from .batch import Batch
from .sequence import Phase

STEP_HOOKS = ("check", "before_step", "moves", "settle", "after_step")
_SET, _EXTEND = object.__setattr__, list.extend  # the engine's own writes (``sequence.py``)
_DECODE = Phase.DECODE


class Stretches:
    """The stretches of one ``EngineState``: which are safe now, and applying them."""

    def __init__(self, state):
        self.state = state
        parts = state.parts
        quiet_steps = all(
            getattr(part, "stretches", False) or not any(hasattr(part, h) for h in STEP_HOOKS)
            for part in parts
        )
        stops = decision.quiet((state, *parts), state.rules) if quiet_steps else None
        self.stops = stops  # None: this device allows no stretch

    def length(self, batch: Batch, ends, at: int, stop: int) -> int:
        """The largest k <= ``stop - at`` such that the steps ending at ``ends[at : at + k]``,
        each running ``batch``, form a stretch now (0: none; 1: a single step's worth)."""
        if self.stops is None or batch.prefill or batch.preempt or batch.swap_out:
            return 0
        if batch.swap_in or not batch.decode or len(set(batch.decode)) != len(batch.decode):
            return 0
        state = self.state
        live = state.live
        members = [live.get(rid) for rid in batch.decode]
        if any(seq is None or seq.phase is not _DECODE for seq in members):
            return 0
        k = min(stop - at, *(seq.remaining_output for seq in members))
        if k < 1:
            return 0
        until = min((quiet() for quiet in self.stops), default=math.inf)
        # the decision points at ends[at : at + k - 1] must come before ``until``
        k = min(k, bisect.bisect_left(ends, until, at, at + k) - at + 1)
        tally, device = state.tally, state.device
        if tally.pages_kept and device.kv_pages is not None:
            room = device.kv_pages - tally.pages
            each = [rules.page_opens(device, seq.context_tokens, k) for seq in members]
            if sum(map(len, each)) > room:  # the (room + 1)-th page to open breaks the pool
                opens = sorted(j for steps in each for j in steps)
                k = opens[room] - 1 if room >= 0 else 0
        return k

    def run(self, batch: Batch, ends, at: int, k: int) -> list[int]:
        """Apply the stretch of ``k`` (>= 2) steps that ``length`` allows: each member decodes
        ``k - 1`` times at once, getting the tokens at ``ends[at : at + k - 1]``, then the last
        step runs as a single one (``EngineState.run_step``: a member may finish there).
        Returns the steps (1 .. k) at which a page opens, one entry per page (empty where the
        state counts no pages); the state's ``step_pages`` is the count after the last."""
        state = self.state
        live, device, tally = state.live, state.device, state.tally
        quiet = k - 1
        times = ends[at : at + quiet]
        opens: list[int] = []
        tally.changes += quiet  # one per step, as ``run_step`` counts them
        for rid in batch.decode:
            seq = live[rid]
            if tally.pages_kept:
                opens.extend(rules.page_opens(device, seq.context_tokens, quiet))
            _SET(seq, "decodes", seq.decodes + quiet)
            _EXTEND(seq.token_times_ms, times)
        tally.pages += len(opens)
        before = tally.pages
        state.run_step(batch, ends[at + k - 2], ends[at + k - 1])
        opens += [k] * (state.step_pages - before)
        return opens
