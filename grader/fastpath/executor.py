"""A batch-level executor for reference policies whose steps have a simple structure.

The lab engine asks a policy for every batch and hands each token to its sequence. For the
course's reference policies the batches follow from a few counters: every decode batch holds the
whole running set, prefill goes to the waiting queue in arrival order, and at most one request
is part-way through its prompt (the head of the queue). So a step here costs work proportional
to what changes (arrivals, chunks, completions), never to the number of running or waiting
requests, and a request's decode tokens are one contiguous range of the decode steps: its token
times are a slice of the step end times, which is what the compact run format stores.

A *planner* stands for one policy: ``planner(state) -> (decode, chunks, tokens)`` says whether
the step decodes the running set, which ``(queue position, tokens)`` chunks it prefills
(starting at the head) and their total. The executor owns the clock and the device arithmetic,
written exactly as the lab engine writes it, so times agree to the bit (the differential tests
check that they do).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, truediv
from typing import TYPE_CHECKING

from .columns import Table, floats, ints, zeros

if TYPE_CHECKING:
    import numpy as np


class Unsupported(Exception):
    """The run leaves what the executor covers (the lab engine then runs it, or explains)."""


@dataclass(slots=True)
class QueueState:
    """What a planner reads at a decision point. Queue positions follow arrival order."""

    running: int = 0  # requests in the running set (first token out, more to come)
    head: int = 0  # queue position of the earliest waiting request
    head_done: int = 0  # prompt tokens of the head already prefilled
    arrived: int = 0  # positions below this have arrived
    decoded_last: bool = False  # the previous submission decoded (False at start, after idling)
    reserved: int = 0  # KV pages reserved by the holders (planners that reserve)


Plan = tuple[bool, list[tuple[int, int]], int]
Planner = Callable[[QueueState], Plan]


@dataclass
class Steps:
    """What the executor produced; request fields are in trace order.

    Per-step and per-request values are columns (``columns``), not lists of Python objects.
    """

    starts: array = field(default_factory=floats)
    ends: array = field(default_factory=floats)
    idle: list[list] = field(default_factory=list)  # [step, start] after each idle wait
    decode_steps: array = field(default_factory=ints)
    chunks: Table = field(default_factory=lambda: Table(4))  # [step, request, from, tokens]
    first_step: array = field(default_factory=ints)  # the step of each first token
    first_decode: array = field(default_factory=ints)  # its first decode's decode index
    # executors with preemption (``paged``) give the compact tables themselves, in trace order
    slices: Table | None = None  # [request, step, decodeIndex, count]
    preempts: list[list[int]] | None = None  # [step, request]
    recomputes: array | None = None  # per request
    recomputed_tokens: array | None = None  # per request: the cache positions it dropped
    completed: np.ndarray | None = None  # per request (bool); False: rejected at arrival


@dataclass(frozen=True)
class Workload:
    """The trace in queue (arrival) order; ``reserve`` holds the pages a start must reserve."""

    order: array
    arrival: array
    prompt: array
    output: array
    reserve: array

    @classmethod
    def of(cls, trace, device) -> Workload:
        """The workload of ``trace``: its requests' columns (``plain_columns``) in arrival
        order, ties in trace order."""
        arrival, prompt, output = plain_columns(trace)
        order = sorted(range(len(arrival)), key=arrival.__getitem__)  # stable: ties in trace order
        prompt, output = (
            array("q", map(prompt.__getitem__, order)),
            array("q", map(output.__getitem__, order)),
        )
        # ``device.pages_for`` (math.ceil of a true division), exact for counts below 2**53
        pages = device.page_tokens
        reserve = array("q", map(math.ceil, map(truediv, map(add, prompt, output), repeat(pages))))
        return cls(
            array("q", order), array("d", map(arrival.__getitem__, order)), prompt, output, reserve
        )


def plain_columns(trace) -> tuple[array, array, array]:
    """``(arrival, prompt, output)`` of ``trace``'s requests as columns (``array``), in trace
    order: a column-read trace's own (do not change them), or made from its requests."""
    columns = getattr(trace.requests, "columns", None)
    if columns is not None:
        return columns.arrival, columns.prompt, columns.output
    reqs = trace.requests
    return (
        array("d", [r.arrival_ms for r in reqs]),
        array("q", [r.input_tokens for r in reqs]),
        array("q", [r.output_tokens for r in reqs]),
    )


def request_columns(trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(arrival, prompt, output)`` of ``trace``'s requests as numpy arrays, in trace order.

    A trace read into columns (``grader.fastpath.tracecolumns``) gives them without a
    per-request object.
    """
    import numpy as np

    arrival, prompt, output = plain_columns(trace)
    return (
        np.frombuffer(arrival, dtype=np.float64),
        np.frombuffer(prompt, dtype=np.int64),
        np.frombuffer(output, dtype=np.int64),
    )


def request_ids(trace) -> list[str]:
    """The ids of ``trace``'s requests, in trace order."""
    columns = getattr(trace.requests, "columns", None)
    return columns.ids if columns is not None else [r.id for r in trace.requests]


def execute(work: Workload, device, planner: Planner, capped: bool = False) -> Steps:
    """Run ``planner`` over ``work`` on ``device`` (no per-context costs) until all is done.

    ``capped``: the planner itself keeps the active cap, so the executor need not check it.
    """
    if device.prefill_ms_per_context_token or device.decode_ms_per_context_token:
        raise Unsupported("per-context-token costs")
    total = len(work.order)
    out = Steps(first_step=zeros(total), first_decode=zeros(total))
    leaving: dict[int, list[int]] = {}  # decode index -> [requests, pages] leaving after it
    st = QueueState()
    apply = _prefiller(work, st, out, leaving)
    clock = 0.0
    arrival, idle = work.arrival, out.idle
    add_start, add_end, add_decode = out.starts.append, out.ends.append, out.decode_steps.append
    overhead, per_token = device.overhead_ms, device.prefill_ms_per_token
    batch_ms, per_seq = device.decode_batch_ms, device.decode_ms_per_seq
    steps = decodes = arrived = 0  # the locals of ``len(out.ends)``, ``len(out.decode_steps)``
    while True:
        while arrived < total and arrival[arrived] <= clock:
            arrived += 1
        st.arrived = arrived
        if st.head == arrived and not st.running:
            if arrived == total:
                return out
            clock, st.decoded_last = arrival[arrived], False  # idle: next arrival
            idle.append([steps, clock])
            continue
        decode, plan, tokens = planner(st)
        # ``step_end``, inlined: the same operations in the same order
        decoded = st.running if decode else 0
        if not decoded and not tokens:
            raise Unsupported("empty batch")
        busy = per_token * tokens
        if decoded:
            busy += batch_ms + per_seq * decoded
        end = clock + overhead + busy
        if not capped:
            _check_active(device, st, plan)
        add_start(clock)
        add_end(end)
        if decode:
            add_decode(steps)
            decodes += 1
        apply(plan, steps, decodes)
        steps += 1
        if decode:
            gone = leaving.pop(decodes - 1, None)
            if gone is not None:
                st.running -= gone[0]
                st.reserved -= gone[1]
        st.decoded_last = decode
        clock = end


def step_end(device, clock: float, decoded: int, tokens: int) -> float:
    """The step's end, with the lab device's arithmetic in the lab engine's order."""
    return clock + device.overhead_ms + step_work(device, decoded, tokens)


def step_work(device, decoded: int, tokens: int) -> float:
    """A step's device time without the overhead, computed as the lab engine computes it."""
    if not decoded and not tokens:
        raise Unsupported("empty batch")
    work = device.prefill_ms_per_token * tokens
    if decoded:
        work += device.decode_batch_ms + device.decode_ms_per_seq * decoded
    return work


def _check_active(device, st: QueueState, plan) -> None:
    if device.max_active is None:
        return
    starting = sum(1 for pos, _ in plan if pos != st.head or not st.head_done)
    if st.running + (1 if st.head_done else 0) + starting > device.max_active:
        raise Unsupported("the batch exceeds the active cap")


def _prefiller(work: Workload, st: QueueState, out: Steps, leaving) -> Callable:
    """``apply(plan, step, decodes)``: the step's chunks applied (starts reserve, completions
    join the running set); ``decodes`` counts the decode steps so far, this one included."""
    order, prompt, output, reserve = work.order, work.prompt, work.output, work.reserve
    add_chunk, first_step, first_decode = out.chunks.flat.extend, out.first_step, out.first_decode

    def apply(plan, step: int, decodes: int) -> None:
        joined = 0
        for pos, tokens in plan:
            if pos != st.head:
                raise Unsupported("chunks must follow the queue from its head")
            done = st.head_done
            if not done:
                st.reserved += reserve[pos]
            req = order[pos]
            add_chunk((step, req, done, tokens))  # Table.add, without the call
            if done + tokens < prompt[pos]:
                st.head_done = done + tokens
                continue
            st.head, st.head_done = pos + 1, 0
            first_step[req], first_decode[req] = step, decodes  # decodes from the next on
            more = output[pos] - 1
            if not more:  # done now: its pages leave before the next decision, as a
                st.reserved -= reserve[pos]  # completion after this step's decode would
                continue
            joined += 1
            gone = leaving.setdefault(decodes + more - 1, [0, 0])
            gone[0] += 1
            gone[1] += reserve[pos]
        st.running += joined

    return apply
