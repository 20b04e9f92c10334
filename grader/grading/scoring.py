"""A checked run scored against the reference: an exact case's schedule, a goodput case's
goodput, a script case's answers; when they differ, the kind of mistake (``diagnosis``).

Every figure comes from the parent's own replay, never from the run file's entries.
"""

from __future__ import annotations

from dataclasses import replace

from .. import casekinds, constant_answers, diagnosis
from ..cases import Case, Kind
from ..course.golden import case_limits
from ..units import Unit
from ..verify import compare
from .hidden import Note
from .report import Status
from .verdict import Verdict, safely

UNCLASSIFIED = "the first difference from the reference could not be classified"


def answers(unit: Unit, case: Case, golden: dict, document) -> Verdict:
    """A script case: the child's answers against the reference's (``golden["answer"]``),
    with the kind of mistake when they differ (``diagnosis.diagnose_answers``)."""
    want = golden["answer"]["answers"]
    got = document.get("answers") if isinstance(document, dict) else None
    if casekinds.same_value(got, want):
        return Verdict(Status.PASSED, matched=1.0)
    matched, base = casekinds.answer_share(got, want), casekinds.constant_share(want)
    share = casekinds.credited_share(got, want)
    found = safely(
        lambda: diagnosis.diagnose_answers(unit, case, got, want, golden["run"]),
        diagnosis.Diagnosis(diagnosis.subject(unit, case), UNCLASSIFIED),
    )
    detail = (
        f"{found.staff()}\n"
        f"{round(matched * 100)} % of the answers equal the reference's; a constant answer "
        f"would match {round(base * 100)} %, and only what is above that earns credit"
    )
    return Verdict(Status.WRONG_ANSWER, found, detail=detail, share=share, matched=matched)


def constant_gate(cases: list[Case], verdicts: dict, goldens: dict) -> dict:
    """The verdicts of script cases judged across the set of their kind
    (``constant_answers``): where a kind's answers match the reference's no more than the best
    constant answer does, every case of that kind earns nothing: one whose answer equals the
    reference's becomes a wrong answer that says why, one already wrong keeps its own
    diagnosis (it names the mistake). Public and hidden cases are separate
    sets, so a public case's verdict never depends on a hidden one's. Other verdicts are
    unchanged."""
    sets: dict[tuple, list[Case]] = {}
    for case in cases:
        if case.kind is Kind.SCRIPT:
            sets.setdefault((constant_answers.kind_of(case), case.hidden), []).append(case)
    out = dict(verdicts)
    for group in sets.values():
        got = constant_answers.matched((verdicts[c.id].matched, c.points) for c in group)
        base = constant_answers.baseline(
            [(goldens[c.id]["answer"]["answers"], c.points) for c in group]
        )
        if not constant_answers.no_better_than_constant(got, base):
            continue
        detail = (
            f"across the {len(group)} graded cases of this kind, {round(got * 100)} % of the "
            f"answers equal the reference's; the best constant answer matches "
            f"{round(base * 100)} %, so none earns credit"
        )
        for case in group:
            verdict = verdicts[case.id]
            if verdict.status is Status.PASSED:
                out[case.id] = replace(
                    verdict,
                    status=Status.WRONG_ANSWER,
                    note=Note.CONSTANT_ANSWERS,
                    public="",
                    detail=detail,
                    share=0.0,
                )
            elif verdict.status is Status.WRONG_ANSWER:  # its own diagnosis says more
                out[case.id] = replace(verdict, detail=f"{verdict.detail}\n{detail}", share=0.0)
    return out


def goodput(case: Case, trace_doc: dict, replay, golden: dict, device: dict) -> Verdict:
    """A goodput case: the replayed run scored by its goodput relative to the reference's.

    Every figure comes from the parent's own replay (statuses it checked, metrics it
    recomputed from the token times it rebuilt), never from the run file's entries."""
    mine = casekinds.goodput_score(verified_requests(trace_doc, replay), case.slo)
    ref = casekinds.goodput_score(golden["run"]["requests"], case.slo)
    share = casekinds.goodput_share(mine, ref)
    detail = (
        f"goodput {mine.goodput_per_s:.4g} req/s vs reference {ref.goodput_per_s:.4g} req/s "
        f"({mine.qualifying} vs {ref.qualifying} qualifying requests)"
    )
    status = Status.PASSED if share >= casekinds.CAP else Status.BELOW_REFERENCE
    bounds = casekinds.trace_bounds(trace_doc, device)
    metrics = {"goodput": mine.goodput_per_s, "p99TtftMs": mine.p99_ttft_ms, **bounds}
    metrics["referenceGoodput"] = ref.goodput_per_s  # the leaderboard's fair comparison
    return Verdict(status, detail=detail, share=share, metrics=metrics)


def verified_requests(trace_doc: dict, replay) -> list[dict]:
    """Each request of the trace with the status the replay checked and the metrics it
    recomputed: what goodput and the leaderboard are computed from."""
    return [
        {
            "arrivalMs": request["arrivalMs"],
            "status": replay.statuses[request["id"]][0],
            **replay.metrics[request["id"]],
        }
        for request in trace_doc["requests"]
    ]


def compared(unit: Unit, case: Case, trace_doc, device: dict, run: dict, replay, golden):
    """An exact case: the verified run against the golden run; when they differ, the kind of
    the first divergent step (``diagnosis.diagnose_schedule``) is the summary."""
    comparison = compare.compare_with_golden(run, replay, golden["run"])
    if comparison.same:
        return Verdict(Status.PASSED)  # feedback: "passed"
    share = comparison.matching_requests / comparison.total_requests
    limits = case_limits(unit, case)
    found = safely(
        lambda: diagnosis.diagnose_schedule(
            unit, case, trace_doc, device, limits, run, golden["run"]
        ),
        diagnosis.Diagnosis(diagnosis.subject(unit, case), UNCLASSIFIED),
    )
    detail = found.staff()
    if comparison.divergence is not None:
        order = {r["id"]: n for n, r in enumerate(golden["run"]["requests"])}
        div = comparison.divergence
        detail += (
            f"\nfirst divergence: {div.text()}\n"
            f"{compare.side_by_side(golden['run']['events'], run['events'], order, div.index)}"
        )
    elif comparison.metric_mismatch:
        detail += f"\nrecomputed {comparison.metric_mismatch} differs from the reference"
    return Verdict(Status.WRONG_SCHEDULE, found, detail=detail, share=share)
