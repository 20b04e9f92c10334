"""Checks on the first divergent step of a verified run: the kind of a scheduling mistake.

Each check reads the shared state (``state.Shared``) and the two steps taken from it, the
reference's (``want``) and the submission's (``got``), and says whether the difference is of its
kind. The unit's catalogue (``labs/<unit>/diagnoses.yaml``) names the checks it uses, in order,
with the text a student sees; ``describe`` is the fallback when no entry of the catalogue
matches: a fixed phrase for the coarse shape of the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .state import Shared, Step


@dataclass(frozen=True)
class StepPair:
    shared: Shared
    want: Step
    got: Step
    params: dict = field(default_factory=dict)

    @property
    def got_starts(self) -> set[str]:
        return self.shared.fresh_starts(self.got)

    @property
    def want_starts(self) -> set[str]:
        return self.shared.fresh_starts(self.want)


CHECKS: dict[str, Callable[[StepPair], bool]] = {}


def check(name: str):
    def register(function):
        CHECKS[name] = function
        return function

    return register


def _overtaken(pair: StepPair) -> list[tuple[str, str]]:
    """(earlier, later) pairs: ``got`` starts ``later`` while ``earlier``, arrived before it,
    waits unstarted and ``want`` does not do the same."""
    shared, starts = pair.shared, pair.got_starts
    waiting = [rid for rid in shared.waiting_fresh() if rid not in starts]
    pairs = [
        (early, late)
        for late in starts - pair.want_starts
        for early in waiting
        if shared.rank[early] < shared.rank[late]
    ]
    return pairs


@check("ties-out-of-order")
def ties_out_of_order(pair: StepPair) -> bool:
    """Requests that arrived at the same moment started out of trace order."""
    arrival = {rid: seq.arrival_ms for rid, seq in pair.shared.seqs.items()}
    pairs = _overtaken(pair)
    return bool(pairs) and all(arrival[a] == arrival[b] for a, b in pairs)


@check("later-started-first")
def later_started_first(pair: StepPair) -> bool:
    """A request started while one that arrived earlier still waited to start (FIFO broken,
    or a blocked head overtaken)."""
    return bool(_overtaken(pair))


@check("started-while-running")
def started_while_running(pair: StepPair) -> bool:
    """A new request started while others were still decoding, where the reference started
    nobody (static batching: nobody joins a running group)."""
    return bool(pair.got_starts) and not pair.want_starts and bool(pair.shared.running())


@check("decoded-instead-of-starting")
def decoded_instead_of_starting(pair: StepPair) -> bool:
    """The reference started waiting requests; the submission started none and decoded."""
    return bool(pair.want_starts) and not pair.got_starts and bool(pair.got.decode)


@check("started-fewer")
def started_fewer(pair: StepPair) -> bool:
    """Fewer waiting requests started (perhaps none) than the reference started from the same
    state, and no other."""
    return pair.got_starts < pair.want_starts


def _new_starts(pair: StepPair) -> set[str]:
    return pair.got_starts - pair.want_starts


@check("started-in-preempting-step")
def started_in_preempting_step(pair: StepPair) -> bool:
    """A waiting request (new, or a victim resuming) started in a step that preempted, where the
    reference started it not (a step that preempts starts nobody: vLLM V1 stops admitting once
    it preempted)."""
    shared = pair.shared
    got, want = shared.restarts(pair.got), shared.restarts(pair.want)
    return bool(pair.got.preempt) and bool(got - want)


@check("started-before-victim")
def started_before_victim(pair: StepPair) -> bool:
    """A new request started while a preempted one waited to resume and the reference started
    it not (victims go back to the front of the waiting queue)."""
    waiting = pair.shared.preempted - set(pair.got.chunks)
    return bool(_new_starts(pair)) and bool(waiting)


@check("reservation-did-not-fit")
def reservation_did_not_fit(pair: StepPair) -> bool:
    """A request started although its declared maximum did not fit in M beside the
    reservations of every holder (reservation, as ``budgeted`` does it)."""
    shared = pair.shared
    if shared.kv_pages is None:
        return False
    extra = pair.got_starts - pair.want_starts
    held = shared.reserved
    for rid in sorted(pair.got_starts, key=shared.rank.__getitem__):
        held += shared.reservation_pages(rid)
        if rid in extra and held > shared.kv_pages:
            return True
    return False


@check("exact-fit-left-waiting")
def exact_fit_left_waiting(pair: StepPair) -> bool:
    """The reference starts a request whose declared maximum fills M to the last page beside
    the reservations of every holder; the submission leaves it waiting (``>= M`` for ``> M``)."""
    shared = pair.shared
    if shared.kv_pages is None or not pair.got_starts < pair.want_starts:
        return False
    held = shared.reserved
    for rid in sorted(pair.want_starts, key=shared.rank.__getitem__):
        held += shared.reservation_pages(rid)
        if rid not in pair.got_starts:
            return held == shared.kv_pages
    return False


@check("started-more")
def started_more(pair: StepPair) -> bool:
    """More waiting requests started than the reference started."""
    return pair.got_starts > pair.want_starts


@check("left-running-out")
def left_running_out(pair: StepPair) -> bool:
    """A running sequence the reference decodes is missing from the decode step, and no
    preemption explains it."""
    missing = pair.want.decode - pair.got.decode
    return bool(missing) and not (missing & set(pair.got.preempt))


@check("prefilled-instead-of-decoding")
def prefilled_instead_of_decoding(pair: StepPair) -> bool:
    """The reference decodes in this step; the submission ran prefill chunks and no decode."""
    return bool(pair.want.decode) and not pair.got.decode and bool(pair.got.chunks)


@check("mixed-step")
def mixed_step(pair: StepPair) -> bool:
    """Decodes and prefill chunks in one step where the reference keeps them apart."""
    want_mixed = bool(pair.want.decode) and bool(pair.want.chunks)
    return bool(pair.got.decode) and bool(pair.got.chunks) and not want_mixed


@check("other-victim")
def other_victim(pair: StepPair) -> bool:
    """Both preempt, but not the same sequences."""
    return (
        bool(pair.got.preempt) and bool(pair.want.preempt) and pair.got.preempt != pair.want.preempt
    )


@check("needless-preemption")
def needless_preemption(pair: StepPair) -> bool:
    return bool(pair.got.preempt) and not pair.want.preempt


@check("missing-preemption")
def missing_preemption(pair: StepPair) -> bool:
    return bool(pair.want.preempt) and not pair.got.preempt


@check("budget-left-unused")
def budget_left_unused(pair: StepPair) -> bool:
    """Fewer new positions than the reference (and than B) while a request the reference
    prefills more of got fewer tokens or none: budget left on the table."""
    shared, got, want = pair.shared, pair.got, pair.want
    if got.positions >= want.positions:
        return False
    if shared.budget is not None and got.positions >= shared.budget:
        return False
    return any(tokens > got.chunks.get(rid, (0, 0))[1] for rid, (_, tokens) in want.chunks.items())


@check("chunk-size")
def chunk_size(pair: StepPair) -> bool:
    """The same requests get prefill chunks, of other sizes."""
    got, want = pair.got, pair.want
    return set(got.chunks) == set(want.chunks) and got.chunks != want.chunks


@check("other-tenant")
def other_tenant(pair: StepPair) -> bool:
    """The prefill budget went to another set of tenants than the reference's."""
    tenants = pair.shared.tenants
    return {tenants.get(r) for r in pair.got.chunks} != {tenants.get(r) for r in pair.want.chunks}


def describe(pair: StepPair) -> str:
    """A fixed phrase for the coarse shape of the difference (no ids, times or sizes)."""
    got, want = pair.got, pair.want
    if got.preempt != want.preempt:
        return "the first step that differs preempts other sequences than the reference's"
    if got.decode != want.decode:
        return "the first step that differs decodes other sequences than the reference's"
    if pair.got_starts != pair.want_starts:
        return "the first step that differs starts other waiting requests than the reference's"
    if set(got.chunks) != set(want.chunks):
        return "the first step that differs prefills other requests than the reference's"
    return "the first step that differs gives prefill chunks other sizes than the reference's"
