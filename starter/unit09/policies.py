"""Unit 09 scheduling policies: the file you implement and submit.

The device of this unit keeps its KV pages as vLLM V1 does with prefix caching on
(``prefixCaching``): a full page of a prompt prefix that several requests share (trace
``prefix`` segments) is held once, with a reference count, and a request that starts may take
the pages the cache already holds for its first positions instead of computing them. Clients
may also cancel (trace ``cancelMs``): the engine ends a cancelled request at the first decision
point at or after its cancel time, whatever its phase, and releases its pages once.

What a policy sees is unit 08's ``SchedulerView`` (``view.waiting``, ``view.running``,
``view.holders``, ``view.device``, ``view.free_pages``, ``view.memo``), plus:

- ``view.prefix_hit(seq, after=batch)``: the positions ``seq`` would find cached if it started
  now, after the members of ``batch`` (the step built so far); what its first chunk may claim;
- ``view.pool``: the device's prefix cache (``servesim.prefixcache.BlockPool``). Read it, or
  work on ``pool_copy(view)``; never change the view's own pool. A policy uses only these
  names of it (the handout lists them; any other is the cache's inside):
  ``pool.page_tokens`` (positions per page), ``pool.free`` (pages a step may still take,
  freed pages that keep a key included), ``pool.tables[id]`` (a holder's pages, shared ones
  included), ``pool.hit_tokens(id, n)`` (positions ``id`` would find cached if it started
  with ``n``), ``pool.hit_refs(id, n)`` (the reference count of each page of that hit, 0 for a
  page no one holds); on a copy only, ``pool.release(id)`` and ``pool.apply_step(grows,
  victims, starts)`` (``grow_on`` and ``start_on`` call it); and ``pool.copy()`` (``pool_copy``
  calls it).

Every step below says what it takes from the free pages and what it gives back.

``PrefillChunk(id, tokens, cached)`` starts a request with ``cached`` positions taken from the
cache (whole pages, at most ``view.prefix_hit``) before the ``tokens`` it computes; cached
positions cost no device time and no budget.
"""

from servesim import Batch, PrefillChunk, SchedulerView, Wait
from servesim.prefixcache import BlockPool, Grow, Start


def pool_copy(view: SchedulerView) -> BlockPool:
    """A private copy of the device's prefix cache (given): apply each decision of the step
    being built to it, and its ``free``, ``hit_tokens``, ``hit_refs`` and ``tables`` stay
    true. Copying takes nothing from the device's pool and gives nothing back."""
    return view.pool.copy()


def grow_pages(pool: BlockPool, seq, tokens: int) -> int:
    """Pages a holder takes to add ``tokens`` positions to its cache (given): its table
    already holds ``len(pool.tables[seq.id])`` pages, shared ones included."""
    have = len(pool.tables.get(seq.id, ()))
    return max(0, -(-(seq.context_tokens + tokens) // pool.page_tokens) - have)


def grow_on(pool: BlockPool, seq, tokens: int) -> None:
    """Add ``tokens`` positions to the cache of the holder ``seq`` on the copy ``pool``
    (given): it takes ``grow_pages(pool, seq, tokens)`` pages from ``pool.free``."""
    pool.apply_step([Grow(seq.id, seq.context_tokens, tokens)], [], [])


def start_on(pool: BlockPool, seq, hit: int, tokens: int) -> PrefillChunk:
    """Start ``seq`` on the copy ``pool`` with ``hit`` cached and ``tokens`` computed positions,
    and return its chunk (given): a later start of the same step then finds the pages it fills.
    It takes from ``pool.free`` each hit page no sequence holds (``pool.hit_refs`` 0) and the
    ``pages_for(hit + tokens) - hit // pool.page_tokens`` pages of what it computes."""
    pool.apply_step([], [], [Start(seq.id, hit, tokens, seq.prefill_target)])
    return PrefillChunk(seq.id, tokens, hit)


def grow_holders(view: SchedulerView, pool: BlockPool, budget: int):
    """Steps 1 and 2 of ``cancel_aware`` (unit 08's ``paged``), with the pages counted in
    ``pool`` (a copy of the prefix cache; ``prefix_paged`` and ``prefix_admit`` call this).

    1. Walk ``view.holders`` while budget is left: a decode asks for 1 token, a partial
       prefill for ``min(remaining_prefill, budget left)``; it needs ``grow_pages(pool, seq,
       tokens)`` pages from ``pool.free``.
    2. While that is more than ``pool.free``, preempt the last holder of the walk and give its
       pages back with ``pool.release(victim.id)``: only the pages no one else holds return to
       ``pool.free`` (a shared page loses one reference), so do not count
       ``pages_for(context_tokens)`` back. When the last holder is the one asking, it is
       preempted itself (and released the same way) and the walk ends.
    3. Otherwise take its pages on the copy (``grow_on``: ``pool.free`` drops by
       ``grow_pages``) and give it its decode or ``PrefillChunk``.

    Returns ``(decode ids, prefill chunks, victims in the order preempted, budget left)``.
    """
    # YOUR CODE HERE
    raise NotImplementedError("grow_holders() is not implemented yet")


def cancel_aware(view: SchedulerView, budget: int) -> Batch:
    """Unit 08's ``paged`` (vLLM V1: FCFS, chunked prefill, lazy LIFO recompute preemption) on
    traces whose clients cancel, claiming no prefix hits.

    Count the pages in ``free``, ``view.free_pages`` at the start (no pool: no page checks).

    1. Walk ``view.holders`` while budget is left: a decode asks for 1 token, a partial
       prefill for ``min(remaining_prefill, budget left)``; that takes ``pages_for(context +
       tokens) - pages_for(context)`` pages out of ``free``.
    2. While those pages are more than ``free``, preempt the last holder of the walk and give
       its ``pages_for(context_tokens)`` back to ``free``; when it is the one asking, it is
       preempted itself (its pages go back too) and the walk ends. Name victims in
       ``preempt`` in the order preempted.
    3. Only if nobody was preempted: start waiting requests that hold no KV, in queue order,
       while budget is left, fewer than K hold KV and ``pages_for(prefill_target) <= free``
       (the whole prompt must fit); each gets ``PrefillChunk(id, tokens)`` with ``tokens =
       min(prefill_target, budget left)`` (nothing cached) and takes ``pages_for(tokens)``
       out of ``free``: the pages of the chunk it computes now, not the whole prompt's. (A
       chunk shorter than the prompt uses up the budget, so the walk ends with it and taking
       the whole prompt's pages there makes the same step.) The first that cannot start ends
       the walk; nothing in this step gives pages back.

    Cancellation: read everything from the view at every call. A cancelled request has left
    ``view.waiting``, ``view.running`` and ``view.holders`` by the next decision point and its
    pages are already counted free in ``view.free_pages``. Ids remembered from an earlier call
    (in ``view.memo``) may name a terminated request, which the engine refuses to schedule or
    preempt; freed pages counted again by the policy overfill the pool.
    """
    # YOUR CODE HERE
    raise NotImplementedError("cancel_aware() is not implemented yet")


def prefix_paged(view: SchedulerView, budget: int) -> Batch:
    """``paged`` with prefix caching: every request that starts claims its prefix hit.

    1. Grow the holders with ``grow_holders`` on ``pool = pool_copy(view)``: growth takes
       pages from ``pool.free``, each victim's release gives back the pages no one else holds.
    2. Only if nobody was preempted, start the waiting requests that hold no KV, in queue
       order, while budget is left, fewer than K hold KV and ``pages_for(prefill_target) <=
       pool.free`` (the whole prompt, as in ``paged``, hit or not). A request that starts
       claims its hit: ``hit = pool.hit_tokens(seq.id, seq.prefill_target)`` on the copy
       (what ``view.prefix_hit(seq, after=step so far)`` says: pages an earlier start of this
       step fills count) and computes ``tokens = min(prefill_target - hit, budget left)``:
       ``PrefillChunk(id, tokens, hit)``.
    3. Apply each start to the copy (``start_on``, which returns the chunk) before the next.
       It takes from ``pool.free`` ``pages_for(hit + tokens) - hit // pageTokens`` new pages
       for what it computes, plus each hit page no sequence holds (``pool.hit_refs`` 0: it
       leaves the free queue); hit pages that others hold take nothing (one more reference).
       Nothing is given back. The first that cannot start ends the walk.
    """
    # YOUR CODE HERE
    raise NotImplementedError("prefix_paged() is not implemented yet")


def prefix_admit(view: SchedulerView, budget: int) -> Batch:
    """Prefix-aware admission, vLLM V1's rule with prefix caching on.

    As ``prefix_paged`` (steps 1 and 3 the same: ``grow_holders``, then ``start_on`` for
    each start, which takes and gives back what they say), except the start rule of step 2.
    A waiting request with ``hit = pool.hit_tokens(seq.id, prefill_target)`` cached
    positions (``h = hit // pageTokens`` pages, ``refs = pool.hit_refs(seq.id,
    prefill_target)`` their reference counts) needs ``pages_for(prefill_target) - h`` new
    pages, plus each of its ``h`` hit pages that no sequence holds now (``refs`` 0: it sits
    in the free queue, counted in ``pool.free``, and leaves it when the request takes it). It
    starts only when that total is at most ``pool.free``. The hit pages that other sequences
    hold cost nothing: a long shared prefix lets a request in that ``paged`` would keep out.
    """
    # YOUR CODE HERE
    raise NotImplementedError("prefix_admit() is not implemented yet")


def first_resume(view: SchedulerView) -> float:
    """When the first paused stream's buffer drains to the low mark (given): the engine's own
    time for each paused stream (``view.resume_ms``). Call it only while ``view.paused`` is not
    empty."""
    return min(view.resume_ms(s) for s in view.paused)


def backpressure(view: SchedulerView, budget: int) -> Batch | Wait:
    """``cancel_aware`` (unit 08's ``paged``) over the streams that may run, on a streaming
    device (exercise 31.10). Contract:

    - Never decode or prefill a paused stream (``seq.paused``): it gets no tokens, whatever its
      phase, and a waiting request that is paused (preempted while paused) is not started.
    - A paused stream keeps its KV pages and its place: it is never chosen as a victim, so the
      pages it holds are not free for anyone until it resumes or is cancelled at its deadline.
    - When the step would only preempt (the pages missing are held by paused streams), preempt
      nobody and return ``Wait(first_resume(view))``: the first drain to the low mark is when
      pages can move again (the engine also stops the clock at a pause deadline).
    - Read the pause state from the view at every call: the engine resumes a stream by itself,
      and one paused at an earlier call may run now.

    Count the pages in ``free``, ``view.free_pages`` at the start (the pages paused streams
    hold are not in it).

    1. Walk the holders that are not paused, in (re)admission order, while budget is left: a
       running one asks for 1 token, a partial prefill for ``min(remaining_prefill, budget
       left)``; that takes ``pages_for(context + tokens) - pages_for(context)`` out of
       ``free``. While the pages it needs exceed ``free``, preempt the last holder of the walk
       (itself last; the walk ends then), giving its ``pages_for(context_tokens)`` back.
    2. If nobody was preempted, start waiting requests that hold no KV, in queue order: a
       paused one is skipped and the walk goes on to the next. Each starts while budget is
       left, fewer than K hold KV and its ``pages_for(prefill_target)`` fit in ``free``, and
       takes ``pages_for(tokens)`` of the chunk it computes out of ``free`` (as in
       ``cancel_aware``); the first one that is not paused and cannot start ends the walk.
    3. Return the step, unless it holds no decode and no chunk while a stream is paused: then
       ``Wait(first_resume(view))``, which takes and gives back nothing.
    """
    # YOUR CODE HERE
    raise NotImplementedError("backpressure() is not implemented yet")
