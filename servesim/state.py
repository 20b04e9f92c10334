"""Every sequence's state while the engine runs, changed only through these steps:

    arrive (admit or reject) -> run a checked batch (preempt, swap out and in, prefill, decode,
    finish) -> cancel

The core here is what every device has: the queues, the holders of KV, the token rule. Each
feature the device switches on (prefix cache, swap, output buffers, cancels and deadlines,
admission caps: ``components.py``) is a part whose hooks this record calls in the components'
one order (``features.HOOKS`` says where each fires); a feature that is off has no part and
costs nothing. Each change costs work in proportion to what changes; the totals a policy needs
(holders, pages held, pages reserved) are kept as running sums in a ``Tally``.

Leaving is terminal and monotone (``terminate``): a request leaves once, as completed,
rejected or cancelled, and a later event that finds it gone (a second cancel, a deadline that
passes after the client cancelled) does nothing. Its pages are released once: ``release``
frees only what the request still holds. A client cancel (trace ``cancelMs``) is seen
at the first decision point at or after its time (a step end, or the end of an idle wait),
after that point's arrivals and deadlines, whatever the request's phase: waiting, running,
partly prefilled or swapped out. On a streaming device the output buffers come after
them (``streaming.Streams.update``), and a stream paused too long leaves the same way.
"""

from __future__ import annotations

import math
import weakref
from types import MappingProxyType

from . import components, features, rules
from .arrivals import Arrivals
from .batch import Batch
from .device import DeviceProfile
from .features import hooked
from .queues import SeqView, WaitingQueue
from .sequence import Phase, Sequence, Status
from .view import SchedulerView, Tally


class EngineState:
    def __init__(
        self,
        device: DeviceProfile,
        arrivals: Arrivals,
        budget: int | None = None,
        *,
        queue_cap: int | None = None,
        admit=None,
        count_pages: bool = False,
    ):
        self.device = device
        self.arrivals = arrivals
        self.waiting = WaitingQueue()
        self.running: list[Sequence] = []  # first token out, in the order they got it
        # every holder of KV in the order of its (re)admission: a dict keeps insertion order
        self.holding: dict[str, Sequence] = {}
        self.live: dict[str, Sequence] = {}  # arrived and not finished, by id
        self.swapped: list[Sequence] = []  # on the host pool, in the order they left (31.6)
        self.queue_cap, self.admit = queue_cap, admit  # admission limits (``Admission``)
        self.pool = self.streams = None  # the prefix cache, the output buffers: their parts
        limits = {"budget": budget, "queueCap": queue_cap, "admit": admit}
        self.components = components.switched_on(device, limits)
        handle = weakref.proxy(self)  # a part keeps this, so no cycle outlives the run
        self.parts = [c.part(handle) for c in self.components if c.part is not None]
        self.rules = tuple(rule for c in self.components for rule in c.rules)
        # pages are summed where a limit reads them, or where the caller shows them (the viewer)
        kept = count_pages or device.kv_pages is not None or self.pool is not None
        self.tally = Tally(pages_kept=kept)
        self.tally.changes = 0  # counted: each step, each request that leaves
        self._starts = 0  # prefills begun so far (Sequence.prefill_start)
        self.step_pages = 0  # pages held right after the last step, before its finished left
        self.policy_view = None  # what an ``admit`` function is given (``Admission``)
        self._hook = {hook: hooked(self.parts, hook) for hook in features.HOOKS}
        self._before, self._moves = self._hook["before_step"], self._hook["moves"]
        self._settle, self._after = self._hook["settle"], self._hook["after_step"]
        self._on_release, self._refusals = self._hook["release"], self._hook["refuses"]
        self._arrive, self._blockers = self._hook["arrive"], self._hook["blocks"]
        self._marks = self._hook["marks"]
        # the queues' views are lazy, so one view serves every step, at its time (``view``)
        self._view = SchedulerView(
            0.0,
            self.waiting.view(),
            SeqView(self.running, name="view.running"),
            None,
            device,
            budget,
            {},  # the policy's memo, one per run
            self.tally,
            MappingProxyType(self.live),  # read-only, and always the engine's current one
            SeqView(self.holding.values(), name="view.holders"),
            SeqView(self.swapped, name="view.swapped"),
            self.pool,
            self.streams,
        )

    def view(self, clock: float, previous: Batch | None) -> SchedulerView:
        """What the policy sees at ``clock``, after ``previous`` (None: at the start or after
        idling)."""
        return self._view.at(clock, previous)

    # -- the decision point's core hook; the others are the parts' (``decision.hooks``) ------

    def admit_due(self, clock: float) -> None:
        """Every request due by ``clock`` joins the waiting queue or is rejected at arrival: it
        can never fit the page pool, or a part refuses it (an ``admit`` function is given
        ``policy_view``, the view the policy is handed at this decision point)."""
        refusals, arrive = self._refusals, self._arrive
        while (seq := self.arrivals.pop_due(clock)) is not None:
            never = rules.never_fits(self.device, seq.input_tokens, seq.max_output_tokens)
            if never or (refusals and any(refuses(seq) for refuses in refusals)):
                self._leave(seq, Status.REJECTED, seq.arrival_ms)
                continue
            seq.phase = Phase.PREFILL
            self.waiting.add_arrival(seq)
            self.live[seq.id] = seq
            for hook in arrive:
                hook(seq)

    def quiet_until(self) -> float:
        """``admit_due`` does nothing at a decision point before the next arrival (inf: none
        left): what a stretch of steps passes over (``stretch``)."""
        return self.arrivals.next_ms() if self.arrivals else math.inf

    def hooks(self, hook: str) -> tuple:
        """The switched-on parts' bound ``hook`` (``features.HOOKS``), in their order."""
        return self._hook[hook]

    # -- idling ---------------------------------------------------------------------------

    def blocks(self) -> bool:
        """Whether a part holds every live request back (every one a paused stream)."""
        blockers = self._blockers
        return bool(blockers) and any(blocks(self.live) for blocks in blockers)

    def wait_stop(self) -> float:
        """The first time a part's state changes by itself (a paused stream resumes or
        stalls): a policy's ``Wait`` ends there at the latest (inf: never)."""
        return min((stop() for stop in self._hook["wait_stop"]), default=math.inf)

    def idle_until(self, clock: float) -> float:
        """Where an idle device's clock goes: the next arrival or, while a part blocks every
        live request, the first time a part must see (a resume, a stall, a client cancel),
        whichever comes first."""
        wake = math.inf
        if self.live:
            wake = min((stop() for stop in self._hook["idle_stop"]), default=math.inf)
        if self.arrivals:
            wake = min(wake, max(clock, self.arrivals.next_ms()))
        return clock if wake == math.inf else wake

    def terminate(self, seq: Sequence, status: Status, at_ms: float, reason=None) -> bool:
        """``seq`` leaves now, from whatever phase, its pages released, for ``reason``
        (``Sequence.cancel_reason``); False (and nothing changes) when it has already left:
        leaving is terminal."""
        if seq.status is not None:
            return False
        seq.cancel_reason = reason
        self.release(seq)
        if seq.phase is Phase.PREFILL:
            self.waiting.remove(seq)
        elif seq.phase is Phase.DECODE:
            self.running.remove(seq)
        elif seq.phase is Phase.SWAPPED:
            self.swapped.remove(seq)
            self.tally.host -= self.device.pages_for(seq.context_tokens)
        self._leave(seq, status, at_ms)
        return True

    # -- one step ---------------------------------------------------------------------------

    def run_step(self, batch: Batch, start_ms: float, end: float) -> None:
        """Apply a checked batch that ran from ``start_ms`` to ``end``: the parts' page
        changes, preempt, the parts' moves (swap out, swap in), prefill, decode, the parts'
        settling, finish, the parts' after-step (tokens into output buffers)."""
        live, device, tally = self.live, self.device, self.tally
        tally.changes += 1  # caches change: what view.step_ms remembered is stale
        for hook in self._before:
            hook(batch)
        for rid in batch.preempt:
            self._preempt(live[rid])
        for hook in self._moves:
            hook(batch)
        done = []  # sequences that emitted their last token
        for chunk in batch.prefill:
            seq = live[chunk.id]
            if seq.prefilled == 0:
                self._hold(seq, start_ms)
            self.waiting.mark_started(seq)
            if chunk.cached:  # a prefix hit: those positions are in the cache already
                seq.take_hit(chunk.cached)
            if tally.pages_kept:
                tally.pages += rules.pages_added(device, seq.context_tokens, chunk.tokens)
            if seq.take_prefill(chunk.tokens, end):
                self.waiting.remove(seq)
                seq.phase = Phase.DECODE
                self.running.append(seq)
                if seq.remaining_output <= 0:
                    done.append(seq)
        pages_kept = tally.pages_kept
        for rid in batch.decode:
            seq = live[rid]
            if pages_kept:
                tally.pages += rules.pages_added(device, seq.context_tokens, 1)
            if seq.take_decode(end):
                done.append(seq)
        for hook in self._settle:
            hook(done)
        self.step_pages = tally.pages  # what a step of a run shows: before its finished leave
        self._finish(done, end)
        for hook in self._after:
            hook(batch, end)

    def marks(self, batch: Batch) -> dict | None:
        """The run-file fields the parts own for the step just run (None: no part marks)."""
        marks = self._marks
        return {k: v for mark in marks for k, v in mark(batch).items()} if marks else None

    def page_ops(self) -> list | None:
        """The prefix cache's record of the step just run (None without a prefix cache): its
        reference changes, and later those of releases before the next step starts."""
        return None if self.pool is None else self.pool.log

    def _finish(self, done: list[Sequence], end: float) -> None:
        for seq in done:
            self.release(seq)
            self._leave(seq, Status.COMPLETED, end)
        if done:
            self.running[:] = [seq for seq in self.running if seq.status is None]

    def _preempt(self, seq: Sequence) -> None:
        """Drop the cache; keep the emitted tokens; go to the front of the waiting queue and
        prefill prompt + emitted again later. A request that has left is not re-queued."""
        if seq.status is not None:
            return
        self.release(seq)
        if seq.phase is Phase.DECODE:
            self.running.remove(seq)
        else:
            self.waiting.remove(seq)
        seq.drop_cache()
        seq.phase = Phase.PREFILL
        self.waiting.add_preempted(seq)

    def _hold(self, seq: Sequence, start_ms: float) -> None:
        seq.prefill_start_ms = start_ms
        self.take_slot(seq)

    def take_slot(self, seq: Sequence) -> None:
        """``seq`` starts holding KV: (re)admitted now, after every current holder."""
        seq.prefill_start = self._starts
        self._starts += 1
        self.holding[seq.id] = seq
        self.tally.active += 1
        if self.tally.pages_kept:
            self.tally.reserved += self.device.pages_for(seq.reservation_tokens)

    def release(self, seq: Sequence) -> None:
        """Free what ``seq`` holds on the device, once: a sequence that holds nothing (never
        started, preempted, swapped out, or released already) frees nothing."""
        if self.holding.pop(seq.id, None) is None:
            return
        tally = self.tally
        tally.active -= 1
        if tally.pages_kept:
            tally.pages -= self.device.pages_for(seq.context_tokens)
            tally.reserved -= self.device.pages_for(seq.reservation_tokens)
        for hook in self._on_release:
            hook(seq)

    def _leave(self, seq: Sequence, status: Status, at_ms: float) -> None:
        self.tally.changes += 1  # no longer live: view.step_ms must not price it
        seq.status, seq.status_ms, seq.phase = status, at_ms, Phase.FINISHED
        self.live.pop(seq.id, None)
        self.arrivals.left(seq, at_ms)
