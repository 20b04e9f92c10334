"""The prefix cache of a device with ``prefixCaching`` (unit 09), replayed from the run file.

The replay keeps its own ``servesim.prefixcache.BlockPool`` and drives it with each event as
the engine does (``apply_step``: the growing holders in (re)admission order with the named
victims released as they are needed, then the sequences that start, each with the hit its
chunk claims as ``cached``), then releases the sequences that finish in (re)admission order
and those cancelled at the step end. A claim larger than what the cache holds for the request
at that point is refused as ``prefix hit``; a step the pool cannot serve as ``kvPages``. The
pages a step leaves in use are the pool's count, shared pages counted once.

Each event of such a run lists its page reference changes (``pageOps``: ``[op, id, page,
generation, refs after]`` from the step's start until the next step starts, as
``prefixcache`` notes them). The replay reads them against its own count of who holds which
page: a release of a page the request no longer holds is ``page released twice`` (or a
``stale page event`` when the page has since been taken again), a release that says a page
is free while others still hold it ``shared page freed while referenced``; and they must be
exactly the changes its own pool made (``page events``).

``PrefixChecks`` is mixed into the replay's walker (``replay``), which holds ``found``,
``reqs``, ``profile`` and ``occupancy``.
"""

from __future__ import annotations

from servesim import prefixcache

from .problems import ProblemKind

BAD = ProblemKind.INVALID_SCHEDULE


class PrefixChecks:
    pool = None  # the replay's prefix cache (None: the device has none)

    def _pool_init(self, trace) -> None:
        prefixes = {r.id: getattr(r, "prefix", ()) for r in trace.requests}
        self.pool = prefixcache.pool_for(self.profile, prefixes)
        self.admission: dict[str, int] = {}  # id -> order of its current (re)admission
        self.admitted = 0
        self.noting = None  # (event, where) whose page changes the pool is noting now
        self.holds: set[tuple] = set()  # (id, page, generation) held, as the run says
        self.released: set[tuple] = set()
        self.refs: dict[int, int] = {}
        self.generation: dict[int, int] = {}

    def _pool_step(self, event: dict, where, after):
        """Apply ``event`` to the pool; the occupancy ``after`` with the pool's pages."""
        reqs, order = self.reqs, self.admission

        def state(rid):
            st = reqs[rid]
            return st.cache, st.prefilled, st.target, order.get(rid, -1)

        self._check_page_ops()
        self.pool.log, self.noting = [], (event, where)
        chunks = [(c["id"], c["tokens"], c.get("cached", 0)) for c in event["prefill"]]
        grows, starts = prefixcache.step_ops(event["decode"], chunks, state)
        try:
            self.pool.apply_step(grows, event.get("preempt", []), starts)
        except prefixcache.PoolError as exc:
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

    def _check_page_ops(self) -> None:
        """The page changes the noted event lists, against the replay's own."""
        if self.pool is None or self.noting is None:
            return
        (event, where), ours = self.noting, self.pool.log
        listed = event.get("pageOps")
        at = event["startMs"]
        if not isinstance(listed, list):
            self.found.add(BAD, "page events", f"{where} does not list its pageOps", at)
            return
        for op in listed:
            problem = self._page_op(op)
            if problem is not None:
                self.found.add(BAD, problem[0], f"{where}: {problem[1]}", at)
                return
        if listed != ours:
            self.found.add(
                BAD, "page events", f"{where}: its pageOps are not the cache's changes", at
            )

    def _page_op(self, op) -> tuple[str, str] | None:
        """Apply one listed change to the run's own count; ``(reason, message)`` if it breaks
        a page rule."""
        if not (isinstance(op, list) and len(op) == 5 and op[0] in ("take", "hit", "release")):
            return "page events", f"{op!r} is not [op, id, page, generation, refs]"
        kind, rid, page, generation, refs = op
        held = (rid, page, generation)
        if kind == "take":
            if self.refs.get(page, 0) or generation <= self.generation.get(page, 0):
                return (
                    "page events",
                    f"page {page} is taken while in use or without a new generation",
                )
            self.generation[page] = generation
        elif kind == "release" and held not in self.holds:
            if generation != self.generation.get(page):
                return "stale page event", f"'{rid}' releases page {page} of an old generation"
            if held in self.released:
                return "page released twice", f"'{rid}' releases page {page} again"
            return "page events", f"'{rid}' releases page {page}, which it does not hold"
        if kind == "release":
            self.holds.discard(held)
            self.released.add(held)
            self.refs[page] -= 1
        else:
            self.holds.add(held)
            self.released.discard(held)
            self.refs[page] = self.refs.get(page, 0) + 1
        if refs != self.refs[page]:
            if kind == "release" and refs == 0:
                return (
                    "shared page freed while referenced",
                    f"page {page} is freed while {self.refs[page]} requests still hold it",
                )
            return "page events", f"page {page} has {self.refs[page]} references, not {refs}"
        return None
