"""The diagnosis's own state of one request, rebuilt from a verified run's event log alone
(the reference's steps up to a divergence; ``state``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ReqState:
    spec: object  # the trace's servesim.Request
    target: int = 0  # the current prefill target: the prompt, or prompt + emitted after preempt
    prefilled: int = 0
    decodes: int = 0  # decodes since the current prefill
    times: list[float] = field(default_factory=list)
    gone: bool = False  # completed or cancelled: must not run again
    swapped: bool = False  # its cache is on the host pool (31.6)
    recomputes: int = 0
    recomputed: int = 0  # KV positions dropped by preemptions

    def __post_init__(self):
        self.target = self.target or self.spec.input_tokens

    @property
    def cache(self) -> int:
        return self.prefilled + self.decodes

    @property
    def holds(self) -> bool:
        """Holds KV on the device (a swapped-out sequence holds host pages instead)."""
        return self.prefilled > 0 and not self.gone and not self.swapped

    @property
    def decoding(self) -> bool:
        """Prefill done and first token out, not finished (on the device or swapped out)."""
        return self.prefilled >= self.target > 0 and bool(self.times) and not self.gone

    def preempt(self, rules) -> None:
        self.recomputes += 1
        self.recomputed += self.cache
        self.target = rules.recompute_target(self.spec.input_tokens, len(self.times))
        self.prefilled = self.decodes = 0

    def prefill(self, tokens: int, end: float, rules) -> None:
        before = self.prefilled
        self.prefilled += tokens
        if rules.emits_on_prefill(before, tokens, self.target):
            self.times.append(end)

    def decode(self, end: float) -> None:
        self.decodes += 1
        self.times.append(end)

    def finish(self) -> None:
        self.gone = True
