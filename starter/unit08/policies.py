"""Unit 08 scheduling policies: the file you implement and submit (with measure.py).

A policy is called at every decision point and returns the next step as a ``Batch``. Unlike
unit 07, one step may hold decodes and prefill chunks together (a mixed step), and may name
sequences to preempt at its start. What a policy sees (``SchedulerView``):

- ``view.waiting``: requests whose prefill is not finished, in queue order. A preempted request
  is put at the very front (the latest preemption first); everyone else keeps arrival order.
  ``seq.holds_kv`` tells a partial prefill (it holds pages) from the rest;
  ``seq.remaining_prefill`` and ``seq.prefill_target`` (the prompt, plus the tokens already
  emitted after a preemption) say how much is left.
- ``view.running``: requests that have their first token and need more, in that order.
- ``view.holders``: every request holding KV (running ones and partial prefills), in the order
  its current prefill began: the order in which they were (re)admitted.
- ``view.device``: ``max_active`` (K, or None), ``kv_pages`` (M, or None), ``pages_for(tokens)``.
- ``view.active``, ``view.pages_held``, ``view.pages_reserved``, ``view.free_slots``,
  ``view.free_pages``: running totals over the sequences that hold KV now.
- ``view.memo``: a dict that lives for one run, for a policy that needs state between steps.

``Batch(decode=ids, prefill=[PrefillChunk(id, n), ...], preempt=ids)`` is one step; the budget B
counts one position per decoded sequence plus every prefill token. The engine rejects a step
that breaks a device rule (B, K, M) with a message that says which. A policy may instead return
``Wait(until_ms)``: no step now, and the engine asks again at that time or the next arrival.
"""

from servesim import Batch, PrefillChunk, SchedulerView, Wait


def whole_prompts(seqs) -> Batch:
    """A step (given) that prefills the whole remaining prompt of each of ``seqs``."""
    return Batch(prefill=[PrefillChunk(s.id, s.remaining_prefill) for s in seqs])


def static(view: SchedulerView, bucket: int = 0, wait_ms: int = 0) -> Batch | Wait:
    """Static batching (31.2): groups of up to K, no one joins a group that is running.

    While any request runs, decode every running request. Otherwise form the next group from
    ``view.waiting`` by length bucket: with ``bucket`` > 0 a request of ``seq.prefill_target``
    tokens P belongs to bucket ``(P - 1) // bucket`` (widths of ``bucket`` tokens); with
    ``bucket`` = 0 every request shares one bucket. A bucket holds its requests in queue order
    and is ready when it is full (at least K requests; never when K is None) or when its first
    request arrived at least ``wait_ms`` ago (``view.now_ms >= seq.arrival_ms + wait_ms``).
    Launch the ready bucket whose first request stands earliest in the queue: one step that
    prefills the whole prompts of its first K requests (all of them when K is None). When no
    bucket is ready, return ``Wait(t)`` with t the earliest ``arrival_ms + wait_ms`` over the
    buckets' first requests: the device idles until then or the next arrival.

    The defaults (one bucket, no wait) launch the first K waiting requests at once.
    """
    # YOUR CODE HERE
    raise NotImplementedError("static() is not implemented yet")


def continuous(view: SchedulerView) -> Batch:
    """Continuous batching (31.2): refill free slots at every step boundary.

    When a request waits and a slot is free (``view.free_slots`` is None or > 0), one step
    prefills the whole prompts of the first waiting requests that fit in the free slots (FIFO).
    Otherwise decode every running request.
    """
    # YOUR CODE HERE
    raise NotImplementedError("continuous() is not implemented yet")


def budgeted(view: SchedulerView, budget: int) -> Batch:
    """Sarathi-style mixed steps under a token budget, reserving KV for the declared maximum.

    Decode every running request (each counts 1 against ``budget``), then fill what is left of
    the budget with prefill chunks of ``view.waiting`` in order. A request that has not started
    prefill (``not seq.holds_kv``) may start only if fewer than K sequences hold KV and, when
    the device has a page pool, the pages of its reservation (``seq.reservation_tokens``) plus
    the reservations of every holder fit in M. Stop at the first request that cannot start:
    nobody overtakes it.
    """
    # YOUR CODE HERE
    raise NotImplementedError("budgeted() is not implemented yet")


def paged(view: SchedulerView, budget: int) -> Batch:
    """vLLM V1's scheduler (vLLM 0.33.0; FCFS, chunked prefill, no prefix cache, watermark 0):
    KV pages grow on demand, with lazy recompute preemption (31.3, 31.6).

    Keep ``free``, the pages free now (``view.free_pages``, when the device has a pool): every
    page a request takes in this step comes out of it, every page a victim drops goes back in.

    1. Walk ``view.holders`` (their order of (re)admission) while budget is left. A running
       request asks for 1 token (a decode), a partial prefill for ``min(remaining_prefill,
       budget left)`` (its next chunk); that takes ``pages_for(context_tokens + tokens) -
       pages_for(context_tokens)`` pages. Nothing is set aside for a prefill's later chunks.
    2. While those pages are more than ``free``, preempt the last holder of the walk (the most
       recently admitted one) and add its ``pages_for(context_tokens)`` to ``free``. When the
       last holder is the one asking, it is preempted itself, gets nothing, and the walk ends.
       Otherwise the one asking gets its tokens (a decode, or a ``PrefillChunk``).
    3. Only if nobody was preempted in this step, start the requests of ``view.waiting`` that
       hold no KV, in queue order, while budget is left and fewer than K hold KV, if
       ``pages_for(prefill_target)`` (the whole prompt, plus the tokens emitted before a
       preemption) is at most ``free``. Each gets a chunk of ``min(prefill_target, budget
       left)`` tokens and takes that chunk's pages. The first that cannot start ends the walk.

    Name the victims in ``preempt`` in the order they were preempted: the engine puts each at
    the front of the waiting queue in turn, so the last one named restarts first.
    """
    # YOUR CODE HERE
    raise NotImplementedError("paged() is not implemented yet")


def fair(view: SchedulerView, budget: int, quantum: int, weights=None) -> Batch:
    """Deficit round robin over tenants (31.6, optional part).

    Decode every running request first. Then every tenant with waiting work gains
    ``weight * quantum`` credits, capped at ``4 * weight * quantum``; a tenant with nothing
    waiting drops to 0. ``weights`` maps tenant -> weight (default 1 each). Visit the tenants
    with waiting work in name order, round robin, starting after the last tenant that got a
    chunk in the previous step. A visited tenant gives one chunk of its first waiting request
    of ``min(budget left, remaining prefill, whole credits)`` tokens when that is >= 1 and the
    request may run (a request that has not started needs K and, with a pool, its reservation
    to fit, as in ``budgeted``); its credits drop by the tokens taken. Stop when the budget is
    spent or a whole round gives nothing. Keep credits and the last tenant in ``view.memo``.
    """
    # YOUR CODE HERE
    raise NotImplementedError("fair() is not implemented yet")


def timed(view: SchedulerView, target: int, share: int) -> Batch:
    """A time-budgeted step (31.3, optional part): fill each step by its estimated duration.

    Decode every running request. Then walk ``view.waiting`` in order, as ``budgeted`` does: a
    request that has not started (``not seq.holds_kv``) may start only if fewer than K sequences
    hold KV and, with a page pool, its reservation fits beside every holder's; the first that
    cannot start ends the walk. Give each request the largest chunk of q tokens
    (``q <= seq.remaining_prefill``) for which ``view.step_ms`` of the step with that chunk added
    is at most ``target`` ms. While the step holds fewer than ``share`` prefill tokens, q is at
    least ``min(seq.remaining_prefill, share - prefill tokens already in the step)``, even past
    the target: prefill keeps a minimum share of every step. The walk ends at the first request
    whose q is 0 or leaves part of its prefill for later.

    ``view.step_ms`` grows with q, so the largest q within the target can be found by bisection.
    """
    # YOUR CODE HERE
    raise NotImplementedError("timed() is not implemented yet")


def admit(request, view: SchedulerView) -> bool:
    """The goodput challenge's admission decision, called once per arriving request.

    Return False to reject ``request`` at arrival (it still counts as submitted). The reference
    rejects a request with a deadline when the prefill work queued ahead of it, plus its own,
    would already take longer than that deadline on this device.
    """
    # YOUR CODE HERE
    raise NotImplementedError("admit() is not implemented yet")


def challenge(view: SchedulerView, budget: int) -> Batch:
    """The goodput challenge's step policy (with ``admit`` above at every arrival).

    Any policy that keeps the device rules will do; the reference is ``paged``.
    """
    # YOUR CODE HERE
    raise NotImplementedError("challenge() is not implemented yet")
