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
    batch that holds both (the mixed steps of chapter 31). ``preempt`` names sequences whose
    KV cache is dropped at the start of the step (preemption by recompute, unit 08): they keep
    the tokens they emitted and go back to the waiting queue.
    """

    decode: tuple[str, ...] = ()
    prefill: tuple[PrefillChunk, ...] = ()
    preempt: tuple[str, ...] = ()

    def __post_init__(self):
        # Accept lists from policy code; keep the batch immutable.
        object.__setattr__(self, "decode", tuple(self.decode))
        object.__setattr__(self, "prefill", tuple(self.prefill))
        object.__setattr__(self, "preempt", tuple(self.preempt))

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
    def new_positions(self) -> int:
        """What a token budget B counts: one per decoded sequence plus every prefill token."""
        return len(self.decode) + self.prefill_tokens

    @property
    def ids(self) -> list[str]:
        return [*self.decode, *(chunk.id for chunk in self.prefill)]
