"""The device's features, one ``features.Component`` each, in their one order: the order in
which the decision point fires their rules and the engine's state calls their hooks.

    arrivals          every request due is admitted or rejected          (always on)
    admission caps    queueCap and an admit function reject at arrival   (run limits)
    cancels, deadlines a deadline passes at a step end; a client cancels (always on)
    prefix cache      shared-prefix pages, hits that skip prefill work   (prefixCaching)
    swap              a sequence's cache moves to the host pool and back (hostPages > 0)
    output buffers    a full buffer pauses its stream; resume or stall   (streamBufferBytes)

A new rule is one more component: ``register`` adds it to the list (after every other, or
before the one it names), ``unregister`` takes it out; the engine, the trusted replay and the
run viewer read the list when a run starts, so none of them is edited for it.
"""

from __future__ import annotations

import heapq
import math

from . import prefixcache, streaming
from .contract import PolicyError
from .decision import Rule
from .features import Component, Part
from .sequence import Phase, Status


class Admission(Part):
    """A request is rejected at arrival when the queue holds ``queueCap`` requests that never
    started, or when the run's ``admit`` function says no (given the view of that point)."""

    def __init__(self, state):
        self.state = state
        self.queue_cap, self.admit = state.queue_cap, state.admit

    def refuses(self, seq) -> bool:
        state = self.state
        cap = self.queue_cap
        return (cap is not None and state.waiting.unstarted >= cap) or (
            self.admit is not None and not self.admit(seq, state.policy_view)
        )


class Lifecycle(Part):
    """Deadlines (on the first token, seen at a step end) and client cancels (seen at the first
    decision point at or after their time), each a heap keyed by (time, trace order)."""

    def __init__(self, state):
        self.state = state
        self.deadlines: list = []
        self.cancels: list = []

    def arrive(self, seq) -> None:
        if seq.deadline_ms is not None:
            heapq.heappush(self.deadlines, (seq.arrival_ms + seq.deadline_ms, seq.order, seq))
        if seq.cancel_ms is not None:
            heapq.heappush(self.cancels, (seq.arrival_ms + seq.cancel_ms, seq.order, seq))

    def expire_deadlines(self, boundary: float) -> None:
        """At a step end: cancel live requests past their deadline without a first token."""
        heap = self.deadlines
        while heap and heap[0][0] < boundary:
            seq = heapq.heappop(heap)[2]
            if not seq.token_times_ms:
                self.state.terminate(seq, Status.CANCELLED, boundary, "deadline")

    def cancel_clients(self, clock: float) -> None:
        """At a decision point: cancel live requests whose client cancelled by ``clock``."""
        heap, late = self.cancels, self.state.arrivals.late_cancels
        while late:  # a live source's cancels, learnt after admission (``Arrivals``)
            seq = late.pop()
            heapq.heappush(heap, (seq.arrival_ms + seq.cancel_ms, seq.order, seq))
        while heap and heap[0][0] <= clock:
            self.state.terminate(heapq.heappop(heap)[2], Status.CANCELLED, clock, "client")

    def idle_stop(self) -> float:
        """The next client cancel not yet seen (inf when none is left)."""
        return self.cancels[0][0] if self.cancels else math.inf

    def quiet_until(self) -> float:
        """Neither rule does anything at a decision point before the first deadline or client
        cancel still held (a deadline whose request has its first token counts too: early,
        never late); a cancel learnt late (a live source) may be due at once."""
        if self.state.arrivals.late_cancels:
            return -math.inf
        deadline = self.deadlines[0][0] if self.deadlines else math.inf
        return min(deadline, self.idle_stop())


class PrefixPages(Part):
    """The prefix cache (``prefixcache.BlockPool``): the step's page changes before it runs,
    the pool's count as the pages in use, releases in vLLM's scheduling order."""

    def __init__(self, state):
        self.state = state
        self.pool = state.pool = prefixcache.pool_for(state.device)

    def arrive(self, seq) -> None:
        self.pool.prefixes[seq.id] = seq.prefix

    def before_step(self, batch) -> None:
        """The step's page changes (``BlockPool.apply_batch``), noted from here until the next
        step starts (``EngineState.page_ops``)."""
        pool = self.pool
        pool.log = []
        state = prefixcache.seq_state(self.state.live.__getitem__)
        try:
            pool.apply_batch(batch.decode, prefixcache.chunks_of(batch), batch.preempt, state)
        except prefixcache.PoolError as exc:
            raise PolicyError(f"batch: {exc}", exc.limit) from None

    def settle(self, done: list) -> None:
        self.state.tally.pages = self.pool.in_use
        done.sort(key=lambda seq: seq.prefill_start)  # vLLM frees in scheduling order

    def release(self, seq) -> None:
        """The pages ``seq`` shares stay while other tables hold them."""
        self.pool.release(seq.id)
        self.state.tally.pages = self.pool.in_use


class Swap(Part):
    """Swap out (the cache moves to the host pool, tokens kept; 31.6), then swap in (it comes
    back and the sequence runs again, readmitted now)."""

    stretches = True  # a batch that only decodes moves nothing (``stretch``)

    def __init__(self, state):
        self.state = state

    def moves(self, batch) -> None:
        state = self.state
        live, tally, pages_for = state.live, state.tally, state.device.pages_for
        for rid in batch.swap_out:
            seq = live[rid]
            state.release(seq)
            state.running.remove(seq)
            seq.phase = Phase.SWAPPED
            seq.swaps += 1
            tally.host += pages_for(seq.context_tokens)
            state.swapped.append(seq)
        for rid in batch.swap_in:
            seq = live[rid]
            state.swapped.remove(seq)
            tally.host -= pages_for(seq.context_tokens)
            seq.phase = Phase.DECODE
            state.take_slot(seq)
            if tally.pages_kept:
                tally.pages += pages_for(seq.context_tokens)
            state.running.append(seq)


class Buffers(Part):
    """The output buffers (``streaming.Streams``): a buffer per admitted request, the step's
    tokens into them, and the streams that block the device while paused."""

    def __init__(self, state):
        self.state = state
        self.streams = state.streams = streaming.Streams(state.device)

    def arrive(self, seq) -> None:
        self.streams.admit(seq)

    def update_streams(self, clock: float) -> None:
        """Output buffers at a decision point (``streaming.Streams.update``)."""
        self.streams.update(clock, self.state)

    def after_step(self, batch, end: float) -> None:
        self.streams.after_step(batch, end)

    def blocks(self, live) -> bool:
        return self.streams.blocks(live)

    def wait_stop(self) -> float:
        return self.streams.next_change()

    def idle_stop(self) -> float:
        return self.streams.next_change()


def _limited(device, limits) -> bool:
    return limits.get("queueCap") is not None or limits.get("admit") is not None


COMPONENTS: list[Component] = [
    Component("arrivals", rules=(Rule("arrivals", "admit_due"),)),
    Component("admission caps", _limited, part=Admission),
    Component(
        "cancels and deadlines",
        rules=(
            Rule("deadlines", "expire_deadlines", step_end_only=True),
            Rule("client cancels", "cancel_clients"),
        ),
        part=Lifecycle,
        request_fields=("deadlineMs", "cancelMs"),
    ),
    Component(
        "prefix cache",
        lambda device, limits: device.prefix_caching,
        part=PrefixPages,
        event_fields=("pageOps",),
        request_fields=("prefix",),
    ),
    Component(
        "swap",
        lambda device, limits: device.swaps,
        part=Swap,
        event_fields=("swapOut", "swapIn"),
    ),
    Component(
        "output buffers",
        lambda device, limits: device.streams,
        rules=(Rule("output buffers", "update_streams"),),
        part=Buffers,
        request_fields=(
            "readBytesPerS",
            "readsMs",
            "ackMs",
            "pausedMs",
            "bufferPeakBytes",
            "cancelReason",
        ),
    ),
]


def switched_on(device, limits=None) -> list[Component]:
    """The components ``device`` (and the run's ``limits``) switch on, in their order."""
    limits = limits or {}
    return [c for c in COMPONENTS if c.switched_on(device, limits)]


def decision_rules(device, limits=None) -> tuple[Rule, ...]:
    """The decision point's rules on ``device``, in the one order (``decision``)."""
    return tuple(rule for c in switched_on(device, limits) for rule in c.rules)


def register(component: Component, before: str | None = None) -> None:
    """Add ``component`` after every other, or just before the one named ``before``."""
    names = [c.name for c in COMPONENTS]
    if component.name in names:
        raise ValueError(f"a component named {component.name!r} is registered already")
    if before is not None and before not in names:
        raise ValueError(f"no component named {before!r} to register {component.name!r} before")
    COMPONENTS.insert(names.index(before) if before else len(COMPONENTS), component)


def unregister(name: str) -> None:
    """Take the component named ``name`` out of the list."""
    COMPONENTS[:] = [c for c in COMPONENTS if c.name != name]
