"""What a policy sees at a decision point, and the totals it needs for K/M/B decisions."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from . import rules
from .batch import Batch
from .device import DeviceProfile
from .prefixcache import BlockPool, PoolError, chunks_of, seq_state, step_ops
from .queues import SeqView
from .sequence import Sequence
from .streaming import Streams

# What a policy may use of ``view.pool`` (the prefix cache) and of its copies; the handout that
# teaches the prefix cache lists the same names, and tests/unit09/test_u09_pool_api.py runs
# every reference policy on a pool that refuses everything else.
POOL_API = ("page_tokens", "free", "tables", "hit_tokens", "hit_refs", "release", "apply_step",
            "copy")  # fmt: skip


@dataclass
class Tally:
    """Running totals over the sequences that hold KV, kept by the engine step by step.

    The page sums are kept only with a page pool (``pages_kept``); without one a view that is
    asked for them counts them over the live sequences.
    """

    active: int = 0
    pages: int = 0  # sum of pages_for(context_tokens) over holders
    reserved: int = 0  # sum of pages_for(reservation_tokens) over holders
    pages_kept: bool = True
    host: int = 0  # host pages of the swapped-out sequences (always kept)
    # The engine's count of changes to any sequence's cache or to who is live (None: nobody
    # counts, so ``step_ms`` remembers nothing), and what ``step_ms`` priced since the last one.
    changes: int | None = field(default=None, compare=False)
    priced: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, device: DeviceProfile, seqs) -> Tally:
        holders = [s for s in seqs if s.holds_kv]
        return cls(
            len(holders),
            sum(device.pages_for(s.context_tokens) for s in holders),
            sum(device.pages_for(s.reservation_tokens) for s in holders),
        )


@dataclass(frozen=True)
class SchedulerView:
    """What a policy sees at a decision point. All of it is read-only: a policy that changes
    the view, a list of it, a sequence or its token times is stopped with a message naming
    what it changed (``contract.Guard``, on every call).

    ``waiting``: arrived, prefill not finished, in queue order: preempted sequences at the front
    (the latest preemption first: the engine puts each victim of a batch at the front in turn,
    so the last one named stands first), then the rest in arrival order (ties in trace order),
    partial prefills where they stand. ``running``: first token out, not finished, in the order
    they got it. ``holders``: every sequence that holds KV, in the order its current prefill
    began (vLLM V1's ``running`` queue). ``swapped``: sequences swapped out to the host pool,
    in the order they left (31.6). All are read-only sequences valid during the call.
    ``memo`` is one dict per run for a policy's own state. On a streaming device
    ``paused`` lists the streams whose output buffer is full (``seq.paused``), which no batch
    may decode or prefill, and ``buffer_bytes(seq)`` reads a buffer's level now.
    """

    now_ms: float
    waiting: SeqView | tuple[Sequence, ...]  # the engine passes lazy views, tests may pass tuples
    running: SeqView | tuple[Sequence, ...]
    previous: Batch | None  # the batch that just finished (None at the start or after idling)
    device: DeviceProfile
    budget: int | None = None  # the token budget B the engine enforces (None: none)
    memo: dict = field(default_factory=dict)
    tally: Tally | None = field(default=None, repr=False)  # engine-kept totals
    live: Mapping[str, Sequence] | None = field(default=None, repr=False)  # id -> sequence
    # every holder in the order of its (re)admission (engine-kept; None: from the queues)
    holding: SeqView | tuple[Sequence, ...] | None = field(default=None, repr=False)
    swapped: SeqView | tuple[Sequence, ...] = ()
    pool: BlockPool | None = field(default=None, repr=False)  # prefix cache: POOL_API
    streams: Streams | None = field(default=None, repr=False)  # output buffers

    def at(self, now_ms: float, previous: Batch | None) -> SchedulerView:
        """The same view at another decision point: another time and previous batch. What the
        engine builds every step; copying the fields is much faster than setting each frozen
        field anew."""
        view = object.__new__(SchedulerView)
        view.__dict__.update(self.__dict__, now_ms=now_ms, previous=previous)
        return view

    def _tally(self, pages: bool = True) -> Tally:
        if self.tally is not None and (self.tally.pages_kept or not pages):
            return self.tally
        return Tally.of(self.device, (*self.waiting, *self.running))

    @property
    def active(self) -> int:
        """Sequences holding KV now (running ones and partial prefills)."""
        return self._tally(pages=False).active

    @property
    def holders(self) -> tuple[Sequence, ...]:
        """Every sequence holding KV now, in the order its current prefill (or recompute) began,
        i.e. the order of (re)admission (``seq.prefill_start``): vLLM V1's ``running`` queue.

        When requests start in queue order and only the last one started may stop part-way
        through its prefill (as ``budgeted`` and ``paged`` do), that is ``running`` followed by
        the partial prefill, if any.
        """
        if self.holding is not None:
            return tuple(self.holding)
        partial = [s for s in self.waiting if s.holds_kv]
        return tuple(sorted((*self.running, *partial), key=lambda s: s.prefill_start))

    @property
    def pages_held(self) -> int:
        return self._tally().pages

    @property
    def pages_reserved(self) -> int:
        """Pages of every holder's declared maximum (prompt + maxOutputTokens)."""
        return self._tally().reserved

    @property
    def free_slots(self) -> int | None:
        cap = self.device.max_active
        return None if cap is None else cap - self.active

    @property
    def free_pages(self) -> int | None:
        pool = self.device.kv_pages
        return None if pool is None else pool - self.pages_held

    @property
    def host_pages_held(self) -> int:
        """Host pages of the swapped-out sequences."""
        if self.tally is not None:
            return self.tally.host
        return sum(self.device.pages_for(s.context_tokens) for s in self.swapped)

    @property
    def free_host_pages(self) -> int:
        """Host pages a swap-out may still take (0 on a device without a host pool)."""
        return self.device.host_pages - self.host_pages_held

    @property
    def paused(self) -> tuple[Sequence, ...]:
        """The paused streams, in the order they paused (empty without streaming)."""
        streams = self.streams
        return () if streams is None else tuple(buf.seq for buf in streams.paused.values())

    def buffer_bytes(self, seq: Sequence) -> float:
        """Bytes in ``seq``'s output buffer now (0 without streaming, or for a client that
        reads at once)."""
        return 0.0 if self.streams is None else self.streams.occupancy(seq.id, self.now_ms)

    def resume_ms(self, seq: Sequence) -> float:
        """When the paused stream ``seq`` resumes: the time the engine itself computed when it
        paused, so a ``Wait`` until then is always later than now (a level recomputed from now
        could round to the low mark a moment early). At a trace's read rate a closed form; for a
        served client the time of the read that does it, inf until that read has come; inf when
        ``seq`` is not paused."""
        buf = None if self.streams is None else self.streams.paused.get(seq.id)
        return math.inf if buf is None else buf.resume_at

    def sequence(self, rid: str) -> Sequence:
        """The arrived, unfinished sequence with id ``rid`` (KeyError if none)."""
        if self.live is not None:
            return self.live[rid]
        return next(s for s in (*self.waiting, *self.running, *self.swapped) if s.id == rid)

    def violation(self, batch: Batch) -> str | None:
        """Why ``batch`` would break B, K, M or the host pool, or decode a paused stream, now
        (None: it fits). Ids must be valid."""
        if self.streams is not None and (paused := self.streams.violation(batch, self.now_ms)):
            return paused
        broken = self.broken_limit(batch)
        return None if broken is None else broken[1]

    def broken_limit(self, batch: Batch, trial: bool = True) -> tuple[str, str] | None:
        """``(limit, sentence)`` for the first of B, K, M, the host pool or the prefix cache's
        claims that ``batch`` would break now (None: it fits). Ids must be valid. ``trial``
        False leaves the prefix cache's pages to the step itself, which refuses what the
        cache cannot serve when it is applied (``PoolError``): no dry run first."""
        device = self.device
        counted = device.kv_pages is not None and (trial or self.pool is None)
        capped = counted or device.max_active is not None or self.budget is not None
        if not (capped or batch.swap_out or device.host_pages):  # no limit it could break
            return None
        sequence = self.sequence if self.live is None else self.live.__getitem__
        # with a prefix cache the pool counts its pages (a dry run, or the step itself): the
        # sum below would be thrown away, so no decode's growth is priced for it
        pages = device.kv_pages is not None and self.pool is None

        growth = [(sequence(c.id).context_tokens, c.tokens) for c in batch.prefill]
        if pages:  # a decode never adds a holder: it matters for the pages only
            growth += [(sequence(rid).context_tokens, 1) for rid in batch.decode]
        t = self._tally(pages)
        after = rules.occupancy_after(
            self.device,
            rules.Occupancy(t.active, t.pages, self.host_pages_held),
            _caches(sequence, batch.preempt),
            growth,
            _caches(sequence, batch.swap_out),
            _caches(sequence, batch.swap_in),
        )
        if self.pool is not None and not trial:
            after = rules.Occupancy(after.active, 0, after.host)
        elif self.pool is not None:  # shared pages: the pool's own count, after a dry run
            try:
                pages = self._dry_run(batch, sequence, _IN_USE)
            except PoolError as exc:
                return exc.limit, str(exc)
            after = rules.Occupancy(after.active, pages, after.host)
        return rules.cap_violation(self.device, after, batch.new_positions, self.budget)

    def _dry_run(self, batch: Batch, sequence, read):
        """``read(pool)`` of the prefix cache as it would be after ``batch`` (``PoolError``: it
        cannot serve it); the cache itself is left as it is (``BlockPool.trial``)."""
        ops = step_ops(batch.decode, chunks_of(batch), seq_state(sequence))
        grows, victims, starts = _ordered(ops, batch.preempt)
        return self.pool.trial(grows, victims, starts, read)

    def prefix_hit(self, seq: Sequence, after: Batch | None = None) -> int:
        """Positions ``seq`` would find in the prefix cache if it started now, after the
        members of ``after`` (the step built so far: pages an earlier member fills count, pages
        it evicts do not); 0 without a prefix cache, or when its prefill has begun. What a
        chunk may claim as ``cached`` (whole pages, at most ``num_tokens - 1`` positions)."""
        if self.pool is None or seq.prefilled:
            return 0

        def hit(pool):
            return pool.hit_tokens(seq.id, seq.prefill_target)

        if after is not None and (after.decode or after.prefill or after.preempt):
            sequence = self.sequence if self.live is None else self.live.__getitem__
            return self._dry_run(after, sequence, hit)
        return hit(self.pool)

    def fits(self, batch: Batch) -> bool:
        return self.violation(batch) is None

    def step_ms(self, batch: Batch) -> float:
        """What the device would charge for ``batch`` now, overhead included (the t-hat of
        section 31.3): ``rules.step_duration_ms`` with each member's cached positions."""
        sequence = self.sequence if self.live is None else self.live.__getitem__  # as violation
        context = self._decoded(batch.decode, sequence)
        others = (*map(_CHUNK_ID, batch.prefill), *batch.swap_out, *batch.swap_in)
        if context is None:
            others = (*batch.decode, *others)
            context = {}
        if others:
            context = {**context, **dict(zip(others, map(_CONTEXT, map(sequence, others))))}
        return rules.step_duration_ms(self.device, batch, context)

    def _decoded(self, decode, sequence) -> dict | None:
        """The cached positions of the sequences ``decode`` names, remembered until the engine
        next changes a cache or who is live (``Tally.changes``): a policy that bisects prices
        the same decode set many times a step. None for anything but a tuple of ids that
        hashes, which ``step_ms`` reads (and fails on) as it comes."""
        tally = self.tally
        if type(decode) is not tuple or tally is None or tally.changes is None:
            return None
        priced = tally.priced
        if priced.get(_AT) != tally.changes:
            priced.clear()
            priced[_AT] = tally.changes
        try:
            found = priced.get(decode)
        except TypeError:  # an unhashable member
            return None
        if found is None:
            found = dict(zip(decode, map(_CONTEXT, map(sequence, decode))))
            if len(priced) < _PRICED_CAP:
                priced[decode] = found
        return found


_CHUNK_ID, _CONTEXT = attrgetter("id"), attrgetter("context_tokens")
_IN_USE = attrgetter("in_use")
_AT, _PRICED_CAP = "changes", 64  # Tally.priced: the count it holds for, decode sets kept


def _ordered(ops, victims):
    grows, starts = ops
    return grows, victims, starts


def _caches(sequence, ids) -> list[int] | tuple:
    """The cached positions of each of ``ids`` (most steps name none)."""
    return [sequence(rid).context_tokens for rid in ids] if ids else ()
