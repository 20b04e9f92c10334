"""Per-request state while the engine runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .trace import Request


class Phase(Enum):
    PENDING = "pending"  # not arrived yet
    PREFILL = "prefill"  # arrived, prompt not fully prefilled
    DECODE = "decode"  # first token out, more to come
    FINISHED = "finished"


@dataclass
class Sequence:
    """One request as the engine sees it. Policies read these; only the engine changes them."""

    id: str
    arrival_ms: float
    input_tokens: int
    output_tokens: int
    order: int  # position in the trace; breaks arrival ties
    phase: Phase = Phase.PENDING
    prefilled: int = 0
    token_times_ms: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, request: Request, order: int) -> Sequence:
        return cls(
            request.id, request.arrival_ms, request.input_tokens, request.output_tokens, order
        )

    @property
    def remaining_prefill(self) -> int:
        return self.input_tokens - self.prefilled

    @property
    def generated(self) -> int:
        return len(self.token_times_ms)

    @property
    def remaining_output(self) -> int:
        return self.output_tokens - self.generated

    @property
    def context_tokens(self) -> int:
        """Positions already in the KV cache (the newest token is written by the next decode)."""
        return self.prefilled + max(self.generated - 1, 0)
