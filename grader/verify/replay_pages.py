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

from collections import Counter

from .replay_claims import Refuted


class PageClaims:
    """The run's own count of page references, built from the ``pageOps`` it lists."""

    def __init__(self):
        self.held: dict[tuple, bool] = {}  # (id, page, generation) -> held now, as the run says
        self.refs: Counter = Counter()  # page -> references
        self.generation: dict[int, int] = {}

    def check(self, event: dict, where, ours: list) -> None:
        """``event``'s listed changes against the prefix cache's ``ours``."""
        listed, at = event.get("pageOps"), event["startMs"]
        if not isinstance(listed, list):
            raise Refuted("page events", f"{where} does not list its pageOps", at)
        for op in listed:
            if (problem := self._apply(op)) is not None:
                raise Refuted(problem[0], f"{where}: {problem[1]}", at)
        if listed != ours:
            raise Refuted("page events", f"{where}: its pageOps are not the cache's changes", at)

    def _apply(self, op) -> tuple[str, str] | None:
        """Apply one listed change to the run's own count; ``(reason, message)`` if it breaks
        a page rule."""
        if not (isinstance(op, list) and len(op) == 5 and op[0] in ("take", "hit", "release")):
            return "page events", f"{op!r} is not [op, id, page, generation, refs]"
        kind, rid, page, generation, refs = op
        held, release = (rid, page, generation), kind == "release"
        if kind == "take":
            if self.refs[page] or generation <= self.generation.get(page, 0):
                return (
                    "page events",
                    f"page {page} is taken while in use or without a new generation",
                )
            self.generation[page] = generation
        elif release and not self.held.get(held):
            if generation != self.generation.get(page):
                return "stale page event", f"'{rid}' releases page {page} of an old generation"
            if held in self.held:  # held once, released since
                return "page released twice", f"'{rid}' releases page {page} again"
            return "page events", f"'{rid}' releases page {page}, which it does not hold"
        self.held[held] = not release
        self.refs[page] += -1 if release else 1
        if refs == self.refs[page]:
            return None
        if release and refs == 0:
            return (
                "shared page freed while referenced",
                f"page {page} is freed while {self.refs[page]} requests still hold it",
            )
        return "page events", f"page {page} has {self.refs[page]} references, not {refs}"
