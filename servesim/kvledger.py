"""The KV pages a run holds, step by step, counted by the engine's own page code.

A reader of a run file drives a ``PageLedger`` with each step's batch and with the requests
that leave, in the engine's order (``state.EngineState.run_step``): the step's preemptions,
swaps, prefill chunks and decodes, then ``held`` is the count right after the step, before the
requests it finished let theirs go (``leave``). The run viewer does (its KV line). Nothing here
restates a page rule:

- on a device with ``prefixCaching`` the pages are a ``prefixcache.BlockPool`` driven through
  ``apply_batch`` and ``release``, as the engine drives its own, so a page that several
  requests share counts once and a request keeps its pages while its stream is paused;
- otherwise each holder takes ``rules.pages_for`` of its cached positions, growing by
  ``rules.pages_added``, and a swapped-out request holds host pages, not device pages.

A device without a page limit still has its pages counted (the engine keeps no count there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import prefixcache, rules


@dataclass(frozen=True)
class PageDevice:
    """The device fields page counting reads (a run file's ``device`` may hold others)."""

    page_tokens: int
    kv_pages: int | None = None
    prefix_caching: bool = False

    @classmethod
    def of_run(cls, device: Mapping) -> PageDevice:
        """The fields of a run file's ``device`` object (``pageTokens`` 16 when absent)."""
        return cls(
            int(device.get("pageTokens") or 16),
            device.get("kvPages"),
            bool(device.get("prefixCaching", False)),
        )


class PageLedger:
    """The pages held on ``device`` as a run's steps are applied (module docstring).

    ``prefixes`` maps request ids to their ``prefix`` segments (``(id, tokens)`` pairs), which
    the prefix cache keys pages by. A step the pool cannot serve raises
    ``prefixcache.PoolError``, as it does in the engine.
    """

    def __init__(self, device, prefixes: Mapping[str, Iterable] | None = None):
        self.device = device
        self.pool = prefixcache.pool_for(device, {k: tuple(v) for k, v in (prefixes or {}).items()})
        self.cache: dict[str, int] = {}  # holder -> cached positions
        self.admitted: dict[str, int] = {}  # holder -> the number of its (re)admission
        self.admissions = 0
        self.host: dict[str, int] = {}  # swapped out -> cached positions
        self.pages = 0  # without a prefix cache: the holders' pages
        self.host_pages = 0

    @classmethod
    def of_run(cls, run: Mapping) -> PageLedger:
        """A ledger for a full run entry: its device and its requests' prefixes."""
        prefixes = {
            r["id"]: [(s["id"], s["tokens"]) for s in r.get("prefix") or ()]
            for r in run["requests"]
        }
        return cls(PageDevice.of_run(run["device"]), prefixes)

    @property
    def held(self) -> int:
        """Device pages in use now (a shared page once)."""
        return self.pages if self.pool is None else self.pool.in_use

    @property
    def occupancy(self) -> rules.Occupancy:
        """The holders, their device pages and the host pages, as ``rules.cap_violation``
        reads them."""
        return rules.Occupancy(len(self.cache), self.held, self.host_pages)

    def step(
        self,
        decode: Iterable[str],
        prefill: Iterable[tuple[str, int, int, int]],
        preempt: Iterable[str] = (),
        swap_out: Iterable[str] = (),
        swap_in: Iterable[str] = (),
    ) -> int:
        """Apply one step; ``prefill`` holds ``(id, tokens, cached, target)`` per chunk
        (``target``: the positions its prefill ends at, prompt + tokens emitted before a
        preemption). Returns ``held`` after it. A step the prefix cache cannot serve raises
        its ``PoolError`` once the counts have followed the rest of the step."""
        decode, prefill, preempt = list(decode), list(prefill), list(preempt)
        refused = None
        if self.pool is not None:
            try:
                self._pool_step(decode, prefill, preempt)
            except prefixcache.PoolError as exc:
                refused = exc
        for rid in preempt:
            self._drop(rid)
        for rid in swap_out:
            held = self.host[rid] = self._drop(rid)
            self.host_pages += rules.pages_for(self.device, held)
        for rid in swap_in:
            held = self.host.pop(rid, 0)
            self.host_pages -= rules.pages_for(self.device, held)
            self._grow(rid, held)
        for rid, tokens, cached, _target in prefill:
            self._grow(rid, cached + tokens)
        for rid in decode:
            self._grow(rid, 1)
        if refused is not None:
            raise refused
        return self.held

    def leave(self, rids: Iterable[str], ordered: bool = False) -> None:
        """``rids`` let their pages go, in (re)admission order as the engine frees the requests
        a step finished, or as given (``ordered``: cancelled ones, which the engine frees in
        the order it sees them); a request that holds none frees nothing."""
        admitted = self.admitted
        for rid in rids if ordered else sorted(rids, key=lambda rid: admitted.get(rid, -1)):
            self._drop(rid)
            held = self.host.pop(rid, None)
            if held is not None:
                self.host_pages -= rules.pages_for(self.device, held)

    def _pool_step(self, decode, prefill, preempt) -> None:
        cache, admitted, last = self.cache, self.admitted, self.admissions
        targets = {rid: target for rid, _, _, target in prefill}

        def state(rid):
            held = cache.get(rid, 0)
            return held, held, targets.get(rid, 0), admitted.get(rid, last)

        chunks = [(rid, tokens, cached) for rid, tokens, cached, _ in prefill]
        self.pool.apply_batch(decode, chunks, preempt, state)

    def _grow(self, rid: str, new: int) -> None:
        """``rid`` caches ``new`` positions more (a holder that starts joins last)."""
        held = self.cache.get(rid)
        if held is None:
            held = 0
            self.admitted[rid] = self.admissions
            self.admissions += 1
        if self.pool is None:
            self.pages += rules.pages_added(self.device, held, new)
        self.cache[rid] = held + new

    def _drop(self, rid: str) -> int:
        """``rid`` holds nothing on the device from now on; returns the positions it held."""
        held = self.cache.pop(rid, 0)
        self.admitted.pop(rid, None)
        if self.pool is not None:
            self.pool.release(rid)
        else:
            self.pages -= rules.pages_for(self.device, held)
        return held


def release_order(rids: list[str], previous: dict | None) -> list[str]:
    """Cancelled ``rids`` in the order the engine let their pages go: as the releases listed
    in ``previous`` (the run file's event before the step that sees them cancelled) by its
    ``pageOps`` (a prefix cache run) order them, else as given (status time, trace order)."""
    ops = (previous or {}).get("pageOps") or ()
    first = {}
    for n, op in enumerate(ops):
        if op[0] == "release":
            first.setdefault(op[1], n)
    return sorted(rids, key=lambda rid: first.get(rid, len(ops)))
