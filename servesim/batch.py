"""What a policy hands the device: one submission (a batch)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrefillChunk:
    """``tokens`` more prompt tokens of request ``id``, continuing where its prefill stopped."""

    id: str
    tokens: int


@dataclass(frozen=True)
class Batch:
    """One submission: a decode step for each id in ``decode`` and the prefill chunks.

    Unit 07 policies put either decode ids or prefill chunks in a batch; the device also runs a
    batch that holds both (the mixed batches of chapter 31).
    """

    decode: tuple[str, ...] = ()
    prefill: tuple[PrefillChunk, ...] = ()

    def __post_init__(self):
        # Accept lists from policy code; keep the batch immutable.
        object.__setattr__(self, "decode", tuple(self.decode))
        object.__setattr__(self, "prefill", tuple(self.prefill))

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
        return sum(chunk.tokens for chunk in self.prefill)

    @property
    def ids(self) -> list[str]:
        return [*self.decode, *(chunk.id for chunk in self.prefill)]
