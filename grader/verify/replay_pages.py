"""The page reference changes a prefix-cache run lists, held against the prefix cache's own.

Each event of a run on a device with ``prefixCaching`` lists its page reference changes
(``pageOps``: ``[op, id, page, generation, refs after]`` from the step's start until the next
step starts, as ``servesim.prefixcache`` notes them). ``PageClaims`` reads them against the
run's own count of who holds which page, so a forged list is named for the page rule it
breaks: a release of a page the request no longer holds is ``page released twice`` (or a
``stale page event`` when the page has since been taken again), a release that says a page is
free while others still hold it ``shared page freed while referenced``; and the list must be
exactly the changes the engine's prefix cache made when the replay drove it (``page events``).
"""

from __future__ import annotations

from .replay_claims import Refuted


class PageClaims:
    """The run's own count of page references, built from the ``pageOps`` it lists."""

    def __init__(self):
        self.holds: set[tuple] = set()  # (id, page, generation) held, as the run says
        self.released: set[tuple] = set()
        self.refs: dict[int, int] = {}
        self.generation: dict[int, int] = {}

    def check(self, event: dict, where, ours: list) -> None:
        """``event``'s listed changes against the prefix cache's ``ours``."""
        listed, at = event.get("pageOps"), event["startMs"]
        if not isinstance(listed, list):
            raise Refuted("page events", f"{where} does not list its pageOps", at)
        for op in listed:
            problem = self._apply(op)
            if problem is not None:
                raise Refuted(problem[0], f"{where}: {problem[1]}", at)
        if listed != ours:
            raise Refuted("page events", f"{where}: its pageOps are not the cache's changes", at)

    def _apply(self, op) -> tuple[str, str] | None:
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
