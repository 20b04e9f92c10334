"""Per-request state while the engine runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from . import rules
from .contract import GUARD, LIST_EDITS, edit
from .trace import Request

# The engine's writes on the hot path: the plain list and object operations, which skip the
# refusals below (a policy that calls them on purpose is not what the guard is for).
_APPEND = list.append
_SET = object.__setattr__


class Phase(Enum):
    PENDING = "pending"  # not arrived yet
    PREFILL = "prefill"  # arrived, prompt (or recompute) not fully prefilled
    DECODE = "decode"  # first token out, more to come
    SWAPPED = "swapped"  # first token out, its cache moved to the host pool (31.6)
    FINISHED = "finished"  # completed, rejected or cancelled: see ``status``


class Status(Enum):
    """How a request left the system; every one counts in every denominator."""

    COMPLETED = "completed"
    REJECTED = "rejected"  # at arrival: queue full, could never fit, or refused by admit()
    CANCELLED = "cancelled"  # see ``Sequence.cancel_reason``


class TokenTimes(list):
    """A sequence's token times: a list for every reader, which refuses changes while a policy
    runs (``contract.Guard``). The engine appends with ``list.append`` itself."""

    __slots__ = ("owner",)

    def __init__(self, times=(), owner: str = "?"):
        super().__init__(times)
        self.owner = owner

    def __reduce__(self):  # a copy (pickle, deepcopy) keeps the type and the owner
        return (TokenTimes, (list(self), self.owner))


def _refusing(name: str):
    plain = getattr(list, name)

    def method(self, *args, **kwargs):
        if GUARD.who is not None:
            GUARD.refuse(f"token_times_ms of request {self.owner!r}: {edit(name)}")
        return plain(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in LIST_EDITS:
    setattr(TokenTimes, _name, _refusing(_name))


@dataclass
class Sequence:
    """One request as the engine sees it. Policies read these; only the engine changes them.

    ``prefilled`` counts tokens of the current prefill target: the prompt, or after a
    preemption the prompt plus every token emitted so far (recompute). ``decodes`` counts the
    decode steps since that prefill, so the KV cache holds ``prefilled + decodes`` positions.
    """

    id: str
    arrival_ms: float
    input_tokens: int
    output_tokens: int
    order: int  # position in the trace; breaks arrival ties
    max_output_tokens: int = 0  # declared maximum (0: the same as output_tokens)
    deadline_ms: float | None = None
    tenant: str = ""
    cancel_ms: float | None = None  # client cancels: the client leaves at arrival + cancel_ms
    prefix: tuple[tuple[str, int], ...] = ()  # prefix cache: shared prompt segments (trace.py)
    read_bytes_per_s: float | None = None  # output buffers: the client's read rate (None: at once)
    reads_ms: tuple[float, ...] | None = None  # a served stream's read log (readlog.py)
    paused: bool = False  # output buffers: its buffer is full; not decoded until it drains
    cancel_reason: str | None = None  # "deadline", "client" or "stalled" (a paused stream)
    phase: Phase = Phase.PENDING
    status: Status | None = None
    status_ms: float | None = None
    prefilled: int = 0
    prefill_target: int = 0  # 0: input_tokens (set by the engine at arrival)
    decodes: int = 0
    started: bool = False  # prefill ever started (a never-started request counts for queueCap)
    prefill_start: int = -1  # order in which current prefills began (later start: larger)
    prefill_start_ms: float | None = None  # when the current prefill (or recompute) began
    recomputes: int = 0
    recomputed_tokens: int = 0
    swaps: int = 0  # times it was swapped out
    prefix_hit_tokens: int = 0  # positions taken from the prefix cache at its (re)admissions
    token_times_ms: list[float] = field(default_factory=list)

    def __post_init__(self):
        self.max_output_tokens = self.max_output_tokens or self.output_tokens
        self.prefill_target = self.prefill_target or self.input_tokens
        self.token_times_ms = TokenTimes(self.token_times_ms, self.id)

    def __setattr__(self, name: str, value) -> None:
        """Refused while a policy runs (``contract.Guard``): policies read sequences."""
        if GUARD.who is not None:
            GUARD.refuse(f"{name} of request {self.id!r}")
        _SET(self, name, value)

    def __delattr__(self, name: str) -> None:
        """Refused while a policy runs, as an assignment is (the class default would show)."""
        if GUARD.who is not None:
            GUARD.refuse(f"{name} of request {self.id!r} deleted")
        object.__delattr__(self, name)

    @classmethod
    def of(cls, request: Request, order: int) -> Sequence:
        return cls(
            request.id,
            request.arrival_ms,
            request.input_tokens,
            request.output_tokens,
            order,
            max_output_tokens=request.declared_output,
            deadline_ms=request.deadline_ms,
            tenant=request.tenant,
            cancel_ms=request.cancel_ms,
            prefix=request.prefix,
            read_bytes_per_s=request.read_bytes_per_s,
            reads_ms=request.reads_ms,
        )

    @property
    def remaining_prefill(self) -> int:
        return self.prefill_target - self.prefilled

    @property
    def generated(self) -> int:
        return len(self.token_times_ms)

    @property
    def remaining_output(self) -> int:
        return self.output_tokens - self.generated

    @property
    def context_tokens(self) -> int:
        """Positions in the KV cache now (the newest token is written by the next decode)."""
        return self.prefilled + self.decodes

    @property
    def holds_kv(self) -> bool:
        """Its prefill has started and it has neither finished nor been preempted since; a
        swapped-out sequence keeps its cache on the host, not on the device."""
        return self.prefilled > 0 and self.status is None and self.phase is not Phase.SWAPPED

    @property
    def recomputing(self) -> bool:
        """Preempted and not yet past its recompute prefill."""
        return self.prefill_target > self.input_tokens and self.remaining_prefill > 0

    @property
    def reservation_tokens(self) -> int:
        """The positions ``budgeted`` reserves: the prompt plus the declared output maximum."""
        return self.input_tokens + self.max_output_tokens

    # -- the token rule (rules.py), applied to this sequence; only the engine and runners call

    def drop_cache(self) -> None:
        """Preemption by recompute: the cache goes, the emitted tokens stay, and the next
        prefill target is the prompt plus every emitted token."""
        self.recomputes += 1
        self.recomputed_tokens += self.context_tokens
        self.prefill_target = rules.recompute_target(self.input_tokens, self.generated)
        self.prefilled = self.decodes = 0

    def take_hit(self, cached: int) -> None:
        """A prefix hit: ``cached`` positions found in the prefix cache count as prefilled."""
        self.prefilled += cached
        self.prefix_hit_tokens += cached

    def take_prefill(self, tokens: int, end_ms: float) -> bool:
        """``tokens`` more of the prefill target, in a step ending at ``end_ms``; True when the
        chunk completes the target and so emits the next token."""
        before = self.prefilled
        _SET(self, "prefilled", before + tokens)
        emits = rules.emits_on_prefill(before, tokens, self.prefill_target)
        if emits:
            _APPEND(self.token_times_ms, end_ms)
        return emits

    def take_decode(self, end_ms: float) -> bool:
        """One decode: the newest token's position enters the cache, the next token comes out.
        True when that was the last token of its output."""
        _SET(self, "decodes", self.decodes + 1)
        times = self.token_times_ms
        _APPEND(times, end_ms)
        return len(times) >= self.output_tokens  # >=: a list written behind the guard ends it
