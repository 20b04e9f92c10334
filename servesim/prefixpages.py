"""The records of shared-prefix KV pages (``prefixcache``'s rules use them): a page's key and
state, the most a hit may cover, and the two kinds of page change a step makes."""

from __future__ import annotations

from dataclasses import dataclass

Key = tuple


class PoolError(ValueError):
    """A step the pool cannot serve (``limit`` names the rule it breaks)."""

    def __init__(self, limit: str, message: str):
        super().__init__(message)
        self.limit = limit


def page_key(rid: str, prefix: tuple[tuple[str, int], ...], page: int, page_tokens: int) -> Key:
    """The key of page ``page`` of request ``rid`` once it is full (see the module docstring)."""
    end = (page + 1) * page_tokens
    cut, covered = [], 0
    for sid, tokens in prefix:
        take = min(tokens, end - covered)
        cut.append((sid, take))
        covered += take
        if covered == end:
            return ("prefix", tuple(cut))
    return ("own", rid, page)


def hit_pages(num_tokens: int, page_tokens: int) -> int:
    """At most how many pages a hit may cover: ``num_tokens - 1`` positions, whole pages."""
    return max(num_tokens - 1, 0) // page_tokens


@dataclass(slots=True)
class Page:  # one KV page: its references, its key once full, its generation
    refs: int = 0
    key: Key | None = None
    generation: int = 0


@dataclass(frozen=True)
class Grow:
    """A holder that grows this step: ``new`` positions on top of ``cache``."""

    rid: str
    cache: int
    new: int


@dataclass(frozen=True)
class Start:
    """A sequence that starts its (re)prefill: ``cached`` positions claimed from the cache,
    ``tokens`` computed, out of ``num_tokens`` (prompt + emitted)."""

    rid: str
    cached: int
    tokens: int
    num_tokens: int
