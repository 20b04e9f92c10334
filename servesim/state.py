"""Every sequence's state while the engine runs, changed only through these steps:

    arrive (admit or reject) -> run a checked batch (preempt, swap out and in, prefill, decode,
    finish) -> cancel

Each change costs work in proportion to what changes; the totals a policy needs (holders,
pages held, pages reserved) are kept as running sums in a ``Tally``.

Leaving is terminal and monotone (``terminate``): a request leaves once, as completed,
rejected or cancelled, and a later event that finds it gone (a second cancel, a deadline that
passes after the client cancelled) does nothing. Its pages are released once: ``_release``
frees only what the request still holds. A client cancel (trace ``cancelMs``) is seen
at the first decision point at or after its time (a step end, or the end of an idle wait),
after that point's arrivals and deadlines, whatever the request's phase: waiting, running,
partly prefilled or swapped out. On a streaming device the output buffers come after
them (``streaming.Streams.update``), and a stream paused too long leaves the same way.
"""

from __future__ import annotations

import heapq
import math
from types import MappingProxyType

from . import prefixcache, rules, streaming
from .arrivals import Arrivals
from .batch import Batch
from .contract import PolicyError
from .device import DeviceProfile
from .queues import SeqView, WaitingQueue
from .sequence import Phase, Sequence, Status
from .view import SchedulerView, Tally


class EngineState:
    def __init__(self, device: DeviceProfile, arrivals: Arrivals, budget: int | None = None):
        self.device = device
        self.arrivals = arrivals
        self.waiting = WaitingQueue()
        self.running: list[Sequence] = []  # first token out, in the order they got it
        # every holder of KV in the order of its (re)admission: a dict keeps insertion order
        self.holding: dict[str, Sequence] = {}
        self.live: dict[str, Sequence] = {}  # arrived and not finished, by id
        self.swapped: list[Sequence] = []  # on the host pool, in the order they left (31.6)
        self.pool = prefixcache.pool_for(device)  # shared-prefix pages (unit 09), or None
        self.tally = Tally(pages_kept=device.kv_pages is not None or self.pool is not None)
        self.streams = streaming.streams_for(device)  # output buffers (unit 09), or None
        self.tally.changes = 0  # counted: each step, each request that leaves
        self._deadlines: list[tuple[float, int, Sequence]] = []
        self._cancels: list[tuple[float, int, Sequence]] = []  # client cancels (unit 09)
        self._starts = 0  # prefills begun so far (Sequence.prefill_start)
        self.queue_cap, self.admit = None, None  # admission limits (``limit_admission``)
        self.policy_view = None  # what an ``admit`` function is given (``admit_due``)
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

    # -- arrivals ---------------------------------------------------------------------------

    def admit_arrivals(self, clock: float, view, queue_cap, admit) -> None:
        """Every request due by ``clock`` joins the waiting queue or is rejected at arrival."""
        while (seq := self.arrivals.pop_due(clock)) is not None:
            refused = (
                rules.never_fits(self.device, seq.input_tokens, seq.max_output_tokens)
                or (queue_cap is not None and self.waiting.unstarted >= queue_cap)
                or (admit is not None and not admit(seq, view))
            )
            if refused:
                self._leave(seq, Status.REJECTED, seq.arrival_ms)
                continue
            seq.phase = Phase.PREFILL
            if self.pool is not None:
                self.pool.prefixes[seq.id] = seq.prefix
            self.waiting.add_arrival(seq)
            self.live[seq.id] = seq
            if seq.deadline_ms is not None:
                due = seq.arrival_ms + seq.deadline_ms
                heapq.heappush(self._deadlines, (due, seq.order, seq))
            if seq.cancel_ms is not None:
                due = seq.arrival_ms + seq.cancel_ms
                heapq.heappush(self._cancels, (due, seq.order, seq))
            if self.streams is not None:
                self.streams.admit(seq)

    # -- the decision point's hooks (``decision.RULES``, fired in that order) ----------------

    def limit_admission(self, queue_cap: int | None, admit) -> None:
        """The run's admission limits, which ``admit_due`` applies (``admit_arrivals``)."""
        self.queue_cap, self.admit = queue_cap, admit

    def admit_due(self, clock: float) -> None:
        """Admit or reject every request due by ``clock``; an ``admit`` function is given
        ``policy_view``, the view the policy is handed at this decision point."""
        self.admit_arrivals(clock, self.policy_view, self.queue_cap, self.admit)

    def expire_deadlines(self, boundary: float) -> None:
        """At a step boundary: cancel live requests past their deadline without a first token."""
        heap = self._deadlines
        while heap and heap[0][0] < boundary:
            seq = heapq.heappop(heap)[2]
            if not seq.token_times_ms:
                self.terminate(seq, Status.CANCELLED, boundary, "deadline")

    def cancel_clients(self, clock: float) -> None:
        """At a decision point: cancel live requests whose client cancelled by ``clock``."""
        heap, late = self._cancels, self.arrivals.late_cancels
        while late:  # a live source's cancels, learnt after admission (``Arrivals``)
            seq = late.pop()
            heapq.heappush(heap, (seq.arrival_ms + seq.cancel_ms, seq.order, seq))
        while heap and heap[0][0] <= clock:
            self.terminate(heapq.heappop(heap)[2], Status.CANCELLED, clock, "client")

    def update_streams(self, clock: float) -> None:
        """Output buffers at a decision point (``streaming.Streams.update``)."""
        self.streams.update(clock, self)

    def next_cancel_ms(self) -> float:
        """The next client cancel not yet seen (inf when none is left)."""
        return self._cancels[0][0] if self._cancels else math.inf

    def terminate(self, seq: Sequence, status: Status, at_ms: float, reason=None) -> bool:
        """``seq`` leaves now, from whatever phase, its pages released, for ``reason``
        (``Sequence.cancel_reason``); False (and nothing changes) when it has already left:
        leaving is terminal."""
        if seq.status is not None:
            return False
        seq.cancel_reason = reason
        self._release(seq)
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
        """Apply a checked batch that ran from ``start_ms`` to ``end``: preempt, swap out, swap
        in, prefill, decode, finish."""
        live, device, tally = self.live, self.device, self.tally
        tally.changes += 1  # caches change: what view.step_ms remembered is stale
        if self.pool is not None:
            self._pool_step(batch)
        for rid in batch.preempt:
            self._preempt(live[rid])
        for rid in batch.swap_out:
            self._swap_out(live[rid])
        for rid in batch.swap_in:
            self._swap_in(live[rid])
        done = []  # sequences that emitted their last token
        for chunk in batch.prefill:
            seq = live[chunk.id]
            if seq.prefilled == 0:
                self._hold(seq, start_ms)
            self.waiting.mark_started(seq)
            if chunk.cached:  # a prefix hit: those positions are in the cache already
                seq.prefilled += chunk.cached
                seq.prefix_hit_tokens += chunk.cached
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
        if self.pool is not None:
            tally.pages = self.pool.in_use
            done.sort(key=lambda seq: seq.prefill_start)  # vLLM frees in scheduling order
        self._finish(done, end)
        if self.streams is not None:  # the step's tokens enter their output buffers (unit 09)
            self.streams.after_step(batch, end)

    def _pool_step(self, batch: Batch) -> None:
        """The step's page changes in the prefix cache (``BlockPool.apply_batch``), noted
        from here until the next step starts (``page_ops``)."""
        self.pool.log = []
        state = prefixcache.seq_state(self.live.__getitem__)
        try:
            self.pool.apply_batch(batch.decode, prefixcache.chunks_of(batch), batch.preempt, state)
        except prefixcache.PoolError as exc:
            raise PolicyError(f"batch: {exc}") from None

    def page_ops(self) -> list | None:
        """The prefix cache's record of the step just run (None without a prefix cache): its
        reference changes, and later those of releases before the next step starts."""
        return None if self.pool is None else self.pool.log

    def _finish(self, done: list[Sequence], end: float) -> None:
        for seq in done:
            self._release(seq)
            self._leave(seq, Status.COMPLETED, end)
        if done:
            self.running[:] = [seq for seq in self.running if seq.status is None]

    def _preempt(self, seq: Sequence) -> None:
        """Drop the cache; keep the emitted tokens; go to the front of the waiting queue and
        prefill prompt + emitted again later. A request that has left is not re-queued."""
        if seq.status is not None:
            return
        self._release(seq)
        if seq.phase is Phase.DECODE:
            self.running.remove(seq)
        else:
            self.waiting.remove(seq)
        seq.drop_cache()
        seq.phase = Phase.PREFILL
        self.waiting.add_preempted(seq)

    def _swap_out(self, seq: Sequence) -> None:
        """The cache moves to the host pool; tokens and cache are kept (31.6)."""
        self._release(seq)
        self.running.remove(seq)
        seq.phase = Phase.SWAPPED
        seq.swaps += 1
        self.tally.host += self.device.pages_for(seq.context_tokens)
        self.swapped.append(seq)

    def _swap_in(self, seq: Sequence) -> None:
        """The cache comes back: the sequence runs again, readmitted now (``prefill_start``)."""
        self.swapped.remove(seq)
        self.tally.host -= self.device.pages_for(seq.context_tokens)
        seq.phase = Phase.DECODE
        self._take_slot(seq)
        if self.tally.pages_kept:
            self.tally.pages += self.device.pages_for(seq.context_tokens)
        self.running.append(seq)

    def _hold(self, seq: Sequence, start_ms: float) -> None:
        seq.prefill_start_ms = start_ms
        self._take_slot(seq)

    def _take_slot(self, seq: Sequence) -> None:
        """``seq`` starts holding KV: (re)admitted now, after every current holder."""
        seq.prefill_start = self._starts
        self._starts += 1
        self.holding[seq.id] = seq
        self.tally.active += 1
        if self.tally.pages_kept:
            self.tally.reserved += self.device.pages_for(seq.reservation_tokens)

    def _release(self, seq: Sequence) -> None:
        """Free what ``seq`` holds on the device, once: a sequence that holds nothing (never
        started, preempted, swapped out, or released already) frees nothing."""
        if self.holding.pop(seq.id, None) is None:
            return
        if self.pool is not None:  # the pages it shares stay while other tables hold them
            self.pool.release(seq.id)
        self.tally.active -= 1
        if self.tally.pages_kept:
            self.tally.pages -= self.device.pages_for(seq.context_tokens)
            self.tally.reserved -= self.device.pages_for(seq.reservation_tokens)
        if self.pool is not None:
            self.tally.pages = self.pool.in_use

    def _leave(self, seq: Sequence, status: Status, at_ms: float) -> None:
        self.tally.changes += 1  # no longer live: view.step_ms must not price it
        seq.status, seq.status_ms, seq.phase = status, at_ms, Phase.FINISHED
        self.live.pop(seq.id, None)
        self.arrivals.left(seq, at_ms)
