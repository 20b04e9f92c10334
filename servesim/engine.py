"""The engine loop: admit arrivals, ask the policy for a batch, run it, hand out tokens.

    schedule (policy) -> check -> run (device clock) -> postprocess (tokens, phases)

The policy only decides; the engine owns the clock and every sequence's state.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .batch import Batch
from .device import DeviceProfile
from .sequence import Phase, Sequence
from .trace import Trace


class PolicyError(RuntimeError):
    """The policy returned something the device cannot run; the message says what."""


@dataclass(frozen=True)
class SchedulerView:
    """What a policy sees at a decision point. Treat every sequence in it as read-only."""

    now_ms: float
    waiting: tuple[
        Sequence, ...
    ]  # arrived, prefill not finished; arrival order, ties in trace order
    running: tuple[Sequence, ...]  # first token out, not finished; in the order they got it
    previous: Batch | None  # the batch that just finished (None at the start or after idling)
    device: DeviceProfile


@dataclass(frozen=True)
class Event:
    """One submission as it ran: when, and what it held."""

    index: int
    start_ms: float
    end_ms: float
    work_ms: float
    batch: Batch
    prefill_from: tuple[int, ...]  # each chunk's first token index


@dataclass(frozen=True)
class Timeline:
    sequences: tuple[Sequence, ...]  # trace order
    events: tuple[Event, ...]

    @property
    def all_done_ms(self) -> float:
        return max(s.token_times_ms[-1] for s in self.sequences)


Policy = Callable[[SchedulerView], Batch]
Execute = Callable[[Batch, Mapping[str, int]], float]


def simulate(
    trace: Trace, policy: Policy, device: DeviceProfile, execute: Execute | None = None
) -> Timeline:
    """Run ``policy`` over ``trace`` on ``device`` until every request has all its tokens.

    ``execute`` (optional) runs each checked batch somewhere real, given the batch and the
    context map, and returns its measured duration in ms (> 0); the clock then advances by
    that instead of by the device model. ``Event.work_ms`` keeps the model's figure.
    """
    seqs = [Sequence.of(request, order) for order, request in enumerate(trace.requests)]
    arrivals = deque(sorted(seqs, key=lambda s: (s.arrival_ms, s.order)))
    waiting: list[Sequence] = []
    running: list[Sequence] = []
    events: list[Event] = []
    clock, previous = 0.0, None

    while arrivals or waiting or running:
        while arrivals and arrivals[0].arrival_ms <= clock:
            seq = arrivals.popleft()
            seq.phase = Phase.PREFILL
            waiting.append(seq)
        if not waiting and not running:  # idle: jump to the next arrival
            clock, previous = arrivals[0].arrival_ms, None
            continue

        view = SchedulerView(clock, tuple(waiting), tuple(running), previous, device)
        batch = policy(view)
        starts = check_batch(batch, view)
        context = {seq.id: seq.context_tokens for seq in (*waiting, *running)}
        work = device.work_ms(batch, context)
        if execute is None:
            end = clock + device.overhead_ms + work
        else:
            end = clock + execute(batch, context)
        _postprocess(batch, {s.id: s for s in (*waiting, *running)}, end, waiting, running)
        events.append(Event(len(events), clock, end, work, batch, starts))
        clock, previous = end, batch

    return Timeline(tuple(seqs), tuple(events))


def _postprocess(batch, by_id, end, waiting, running) -> None:
    for chunk in batch.prefill:
        seq = by_id[chunk.id]
        seq.prefilled += chunk.tokens
        if seq.remaining_prefill == 0:
            waiting.remove(seq)
            seq.token_times_ms.append(end)  # the first token comes with the last prefill token
            seq.phase = Phase.DECODE
            running.append(seq)
    for rid in batch.decode:
        by_id[rid].token_times_ms.append(end)
    for seq in [s for s in running if s.remaining_output == 0]:
        seq.phase = Phase.FINISHED
        running.remove(seq)


def check_batch(batch, view: SchedulerView) -> tuple[int, ...]:
    """Raise ``PolicyError`` unless ``batch`` can run now; return each chunk's first token index."""
    if not isinstance(batch, Batch):
        raise PolicyError(f"the policy must return a Batch, got {type(batch).__name__}")
    if not batch.decode and not batch.prefill:
        raise PolicyError(f"empty batch at {view.now_ms:.2f} ms although work is waiting")
    ids = batch.ids
    if len(set(ids)) != len(ids):
        raise PolicyError(f"a request appears twice in the batch at {view.now_ms:.2f} ms")
    running = {s.id: s for s in view.running}
    waiting = {s.id: s for s in view.waiting}
    for rid in batch.decode:
        if rid not in running:
            raise PolicyError(f"decode of '{rid}' at {view.now_ms:.2f} ms: it is not running")
    starts = []
    for chunk in batch.prefill:
        seq = waiting.get(chunk.id)
        if seq is None:
            raise PolicyError(
                f"prefill of '{chunk.id}' at {view.now_ms:.2f} ms: "
                "it has not arrived or needs no prefill"
            )
        ok = isinstance(chunk.tokens, int) and 1 <= chunk.tokens <= seq.remaining_prefill
        if not ok:
            raise PolicyError(
                f"prefill of '{chunk.id}' at {view.now_ms:.2f} ms: {chunk.tokens!r} tokens, "
                f"must be 1..{seq.remaining_prefill}"
            )
        starts.append(seq.prefilled)
    _check_capacity(batch, view)
    return tuple(starts)


def _check_capacity(batch: Batch, view: SchedulerView) -> None:
    device = view.device
    if device.max_active is None and device.kv_pages is None:
        return
    growth = {c.id: c.tokens for c in batch.prefill} | {rid: 1 for rid in batch.decode}
    holders = [s for s in (*view.running, *view.waiting) if s.prefilled or s.id in growth]
    if device.max_active is not None and len(holders) > device.max_active:
        raise PolicyError(
            f"batch at {view.now_ms:.2f} ms: {len(holders)} active sequences, "
            f"cap {device.max_active}"
        )
    if device.kv_pages is not None:
        pages = sum(device.pages_for(s.context_tokens + growth.get(s.id, 0)) for s in holders)
        if pages > device.kv_pages:
            raise PolicyError(
                f"batch at {view.now_ms:.2f} ms: needs {pages} KV pages, budget {device.kv_pages}"
            )
