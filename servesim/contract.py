"""What a policy hands back, checked against its contract before the engine reads it.

A policy returns a ``Batch`` whose ``decode``, ``preempt``, ``swap_out`` and ``swap_in`` hold
request ids (``str``) and whose ``prefill`` holds ``PrefillChunk(id: str, tokens: int)``; an
admission hook returns a ``bool``. Anything else stops the run with one sentence that names the
function, what came back (its type and a short repr) and what was expected, e.g.::

    fcfs() returned a Batch whose prefill chunk for 'b001' has tokens of type float (507.0);
    expected an int number of prompt tokens

These are ``PolicyError`` messages like the engine's other checks, so no traceback reaches the
student. The grader's ``diagnosis.rejections`` matches their shapes (never their text).
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import FrozenInstanceError, dataclass
from typing import NoReturn

from .batch import Batch, PrefillChunk


class PolicyError(RuntimeError):
    """The policy returned something the device cannot run; the message says what, and
    ``limit`` (None: a broken contract) names the rule it breaks as the trusted replay names a
    run file's claim that breaks it (``preempt``, ``swapIn``, ``prefix hit``, ...)."""

    def __init__(self, message: str, limit: str | None = None):
        super().__init__(message)
        self.limit = limit


@dataclass(slots=True)
class Guard:
    """While a policy runs (``start`` .. ``stop``, around every call), ``who`` names it and what
    the view holds refuses changes; ``broken`` keeps the first refusal, so that a policy that
    catches the error is stopped all the same when it returns. Starting and stopping only set
    ``who``: the guard costs the engine two assignments a step.

    Stopped by the guard, with ``changed_view``'s sentence (docs/grading.md, "A policy that
    changes its view"): an assignment to the view, its device, a batch or a chunk (frozen
    dataclasses); any edit of the view's lists of sequences (``queues.SeqView``, read-only at
    all times) or of ``view.live`` (a read-only mapping); an attribute assigned or deleted on
    a sequence or an edit of its token times while a policy runs (``Sequence.__setattr__``,
    ``__delattr__`` and ``sequence.TokenTimes`` ask ``who``; the engine's own writes, between
    calls, go through); a property set with ``object.__setattr__`` (Python refuses:
    ``refused_write``); a change to ``view.tally`` or ``view.pool``, compared before and after
    each call. ``view.memo`` is the policy's own.

    Not stopped by the guard: writes behind it (``object.__setattr__``, ``list.append`` on a
    sequence's token times). Those to the view's fields, the device or a batch change nothing
    of the run: the policy gets copies of the view's fields and the device
    (``engine._handed``), and the engine checks, runs and records its own copy of each batch
    (``engine._own``). Those to a sequence change what the engine does next (its state lives on
    the sequences; comparing every live sequence after every call measured 2.3 times the
    engine's time on the azure-conv-slice trace): the parent's replay of the run's event log
    rejects such a graded run with a named reason (tests/grader/test_view_guard.py).
    """

    who: str | None = None
    broken: str | None = None

    def start(self, who: str) -> None:
        self.who = who

    def stop(self) -> str | None:
        """End the call; the message of the first refused change, if any (then cleared)."""
        self.who = None
        broken, self.broken = self.broken, None
        return broken

    def refuse(self, what: str) -> NoReturn:
        """Stop the policy that changed ``what`` (a change outside a call names no policy)."""
        message = changed_view(self.who or "the policy", what)
        if self.who is not None and self.broken is None:
            self.broken = message
        raise PolicyError(message)


GUARD = Guard()


# what a policy might call to change a list it was given, and how the message names each
LIST_EDITS = ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse")
LIST_EDITS += ("__setitem__", "__delitem__", "__iadd__", "__imul__")
_EDIT_WORDS = {
    "__setitem__": "an item assigned",
    "__delitem__": "an item deleted",
    "__iadd__": "+=",
    "__imul__": "*=",
}


def edit(method: str) -> str:
    """``.sort()``, ``an item assigned``: a list edit as the message names it."""
    return _EDIT_WORDS.get(method, f".{method}()")


def changed_view(who: str, what: str) -> str:
    """The one sentence for a policy that writes to what it was given to read."""
    return (
        f"{who} changed its view ({what}); expected a policy that only reads the view "
        "and returns a Batch (the engine changes the sequences when it runs the batch)"
    )


# Python's own refusals of a write to what the view holds: a frozen dataclass (the view, the
# device, a batch, a chunk), the read-only ``view.live``, and a property of a sequence or the
# view set with ``object.__setattr__`` (``generated``, ``free_pages``, ...)
_NO_SETTER = re.compile(r"property '\w+' of '(Sequence|SchedulerView|DeviceProfile)' object")


def refused_write(who: str, exc: BaseException) -> str | None:
    """The one sentence for ``exc`` when it is Python refusing a write to the view (None when
    it is some other error of the policy's, which is then raised as it is)."""
    if isinstance(exc, FrozenInstanceError):
        return changed_view(who, str(exc))
    text = str(exc)
    if isinstance(exc, (TypeError, AttributeError)) and "'mappingproxy' object" in text:
        return changed_view(who, f"view.live: {text}")
    if isinstance(exc, AttributeError) and _NO_SETTER.match(text):
        return changed_view(who, text)
    return None


_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxtuple = 40, 40, 3, 3
_ID_MEMBERS = ("decode", "preempt", "swap_out", "swap_in")

EXPECT_BATCH = "expected a Batch"
EXPECT_IDS = "expected a list of request ids (str)"
EXPECT_CHUNKS = "expected a list of PrefillChunk(id, tokens)"
EXPECT_TOKENS = "expected an int number of prompt tokens"
EXPECT_BOOL = "expected True or False"


def short(value) -> str:
    """``float (507.0)``: the type and a repr cut to a few dozen characters."""
    return f"{type(value).__name__} ({_SHORT.repr(value)})"


def batch_problem(batch) -> tuple[str, str] | None:
    """``(what came back, what was expected)`` when ``batch`` breaks the Batch contract's
    types, None when its types are right (the engine then checks what it asks for)."""
    if not isinstance(batch, Batch):
        return short(batch), EXPECT_BATCH
    for name in _ID_MEMBERS:
        value = getattr(batch, name)
        if type(value) is not tuple:  # a str, or something Batch could not make a tuple of
            return f"a Batch whose {name} is {short(value)}", EXPECT_IDS
        for item in value:
            if type(item) is not str:
                return f"a Batch whose {name} holds {short(item)}", EXPECT_IDS
    if type(batch.prefill) is not tuple:
        return f"a Batch whose prefill is {short(batch.prefill)}", EXPECT_CHUNKS
    for chunk in batch.prefill:
        if not isinstance(chunk, PrefillChunk):
            return f"a Batch whose prefill holds {short(chunk)}", EXPECT_CHUNKS
        if type(chunk.id) is not str:
            return f"a Batch with a prefill chunk whose id is {short(chunk.id)}", EXPECT_IDS
        if type(chunk.tokens) is not int:
            return (
                f"a Batch whose prefill chunk for {chunk.id!r} has tokens of type "
                f"{short(chunk.tokens)}",
                EXPECT_TOKENS,
            )
    return None


def admit_problem(answer) -> tuple[str, str] | None:
    """``(what came back, what was expected)`` unless an admission hook returned a bool."""
    return None if type(answer) is bool else (short(answer), EXPECT_BOOL)


def sentence(who: str, problem: tuple[str, str]) -> str:
    """The one sentence a broken contract gets: ``fcfs() returned X; expected Y``."""
    got, expected = problem
    return f"{who} returned {got}; {expected}"


def unknown_id(member: str, rid: str) -> tuple[str, str]:
    """A batch that names an id no request of the run has."""
    return (
        f"a Batch whose {member} names {short(rid)}, which no request of the trace has",
        "expected ids of the requests in the view",
    )
