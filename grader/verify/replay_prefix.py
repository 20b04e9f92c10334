"""The prefix cache of a device with ``prefixCaching`` (unit 09), replayed from the run file.

The replay keeps its own ``servesim.prefixcache.BlockPool`` and drives it with each event as
the engine does (``apply_step``: the growing holders in (re)admission order with the named
victims released as they are needed, then the sequences that start, each with the hit its
chunk claims as ``cached``), then releases the sequences that finish in (re)admission order
and those cancelled at the step end. A claim larger than what the cache holds for the request
at that point is refused as ``prefix hit``; a step the pool cannot serve as ``kvPages``. The
pages a step leaves in use are the pool's count, shared pages counted once.

``PrefixChecks`` is mixed into the replay's walker (``replay``), which holds ``found``,
``reqs``, ``profile`` and ``occupancy``.
"""

from __future__ import annotations

import importlib

from .problems import ProblemKind

BAD = ProblemKind.INVALID_SCHEDULE


class PrefixChecks:
    pool = None  # the replay's prefix cache (None: the device has none)

    def _pool_init(self, trace, servesim) -> None:
        self.prefixcache = importlib.import_module(f"{servesim.__name__}.prefixcache")
        prefixes = {r.id: getattr(r, "prefix", ()) for r in trace.requests}
        self.pool = self.prefixcache.pool_for(self.profile, prefixes)
        self.admission: dict[str, int] = {}  # id -> order of its current (re)admission
        self.admitted = 0

    def _pool_step(self, event: dict, where, after):
        """Apply ``event`` to the pool; the occupancy ``after`` with the pool's pages."""
        reqs, order = self.reqs, self.admission

        def state(rid):
            st = reqs[rid]
            return st.cache, st.prefilled, st.target, order.get(rid, -1)

        chunks = [(c["id"], c["tokens"], c.get("cached", 0)) for c in event["prefill"]]
        grows, starts = self.prefixcache.step_ops(event["decode"], chunks, state)
        try:
            self.pool.apply_step(grows, event.get("preempt", []), starts)
        except self.prefixcache.PoolError as exc:
            self.found.add(BAD, exc.limit, f"{where}: {exc}", event["startMs"])
        for start in starts:
            order[start.rid] = self.admitted
            self.admitted += 1
        return type(after)(after.active, self.pool.in_use, after.host)

    def _pool_release(self, rids) -> None:
        """``rids`` leave the device (finished or cancelled), in (re)admission order."""
        order = self.admission
        for rid in sorted(rids, key=lambda rid: order.get(rid, -1)):
            self.pool.release(rid)
        occ = self.occupancy
        self.occupancy = type(occ)(occ.active, self.pool.in_use, occ.host)
