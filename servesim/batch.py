"""What a policy hands the device: one submission (a batch)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter


@dataclass(frozen=True, init=False)
class PrefillChunk:
    """``tokens`` more prompt tokens of request ``id``, continuing where its prefill stopped.

    ``cached`` (devices with ``prefixCaching``): for a sequence that starts its
    (re)prefill, the positions taken from the prefix cache before the ``tokens`` computed ones,
    in whole pages and at most what the cache holds for it when the chunk's turn comes
    (``view.prefix_hit``); they cost no device time and no budget.
    """

    id: str
    tokens: int
    cached: int = 0

    def __init__(self, id: str, tokens: int, cached: int = 0):
        # The generated __init__ of a frozen dataclass sets each field with object.__setattr__;
        # policies make chunks in their inner loops, and writing the fields directly is faster.
        fields = self.__dict__
        fields["id"], fields["tokens"], fields["cached"] = id, tokens, cached

    def __repr__(self) -> str:  # as before the prefix cache when nothing is cached
        cached = f", cached={self.cached!r}" if self.cached else ""
        return f"PrefillChunk(id={self.id!r}, tokens={self.tokens!r}{cached})"


@dataclass(frozen=True, init=False)
class Batch:
    """One submission: a decode step for each id in ``decode`` and the prefill chunks.

    The simplest policies put either decode ids or prefill chunks in a batch; the device also runs a
    batch that holds both (the mixed steps of chapter 31). ``preempt`` names sequences whose
    KV cache is dropped at the start of the step (preemption by recompute): they keep
    the tokens they emitted and go back to the waiting queue.

    The other way to preempt (31.6, devices with a host pool): ``swap_out`` names running
    sequences whose pages move to the host pool at the start of the step (they keep their cache
    and tokens and wait in ``view.swapped``), ``swap_in`` swapped-out sequences whose pages come
    back at the start of the step (running again, they may decode in the same step). The step
    pays for the pages it moves (``rules.transfer_terms``).
    """

    decode: tuple[str, ...] = ()
    prefill: tuple[PrefillChunk, ...] = ()
    preempt: tuple[str, ...] = ()
    swap_out: tuple[str, ...] = ()
    swap_in: tuple[str, ...] = ()

    def __init__(self, decode=(), prefill=(), preempt=(), swap_out=(), swap_in=()):
        # Accept lists (any iterable) from policy code; keep the batch immutable. A string or
        # something that is no iterable stays as given: ``servesim.contract`` names it. Written
        # by hand, not generated: policies make batches in their inner loops (a bisection over
        # ``view.step_ms``), and the generated __init__ of a frozen dataclass, with a
        # ``__post_init__`` that reads each field back, is several times slower.
        fields = self.__dict__
        fields["decode"] = decode if type(decode) is tuple else _as_tuple(decode)
        fields["prefill"] = prefill if type(prefill) is tuple else _as_tuple(prefill)
        fields["preempt"] = preempt if type(preempt) is tuple else _as_tuple(preempt)
        fields["swap_out"] = swap_out if type(swap_out) is tuple else _as_tuple(swap_out)
        fields["swap_in"] = swap_in if type(swap_in) is tuple else _as_tuple(swap_in)

    @classmethod
    def decode_of(cls, seqs) -> Batch:
        """A decode batch holding every sequence in ``seqs``."""
        return cls(decode=tuple(s.id for s in seqs))

    @classmethod
    def prefill_of(cls, seq, tokens: int) -> Batch:
        """A batch with one prefill chunk of ``tokens`` tokens of ``seq``."""
        return cls(prefill=(PrefillChunk(seq.id, tokens),))

    @property
    def prefill_tokens(self) -> int:
        return sum(map(_TOKENS, self.prefill))

    @property
    def new_positions(self) -> int:
        """What a token budget B counts: one per decoded sequence plus every prefill token."""
        return len(self.decode) + self.prefill_tokens

    @property
    def ids(self) -> list[str]:
        return [*self.decode, *map(_ID, self.prefill)]

    @property
    def moved(self) -> tuple[str, ...]:
        """The sequences whose pages this step moves between device and host."""
        return (*self.swap_out, *self.swap_in)


@dataclass(frozen=True)
class Wait:
    """No step now: the device stays idle until ``until_ms`` or the next arrival, whichever
    comes first, and then asks the policy again (a dynamic batcher's wait window, 31.2).

    ``until_ms`` must be later than the decision point's ``view.now_ms``.
    """

    until_ms: float


# A chunk's fields, read in C: the engine and policies sum them over every batch they price.
_ID, _TOKENS = attrgetter("id"), attrgetter("tokens")


def _as_tuple(value):
    """``value`` as a tuple, or as given when it is a string or no iterable at all."""
    if isinstance(value, (str, bytes)):
        return value
    try:
        return tuple(value)
    except TypeError:
        return value
