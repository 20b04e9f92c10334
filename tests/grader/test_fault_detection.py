"""Every fault switch of the lab is flagged, naming the statistic that disagrees."""

from __future__ import annotations

import pytest

from grader import reference
from grader.grading.grade import Status, grade_submission
from grader.grading.inprocess import run_in_process
from grader.verify import ProblemKind, verify_run

# fault -> the statistic the grader must name first
EXPECTED = {
    "ttft-from-prefill-start": "ttftMs",
    "itl-with-first-gap": "itlMs",
    "tpot-over-n": "tpotMs",
    "events-without-overhead": "events[].endMs",
    "e2e-from-first-token": "e2eMs",
}


def test_every_fault_has_an_expectation(unit):
    from servesim.faults import FAULTS

    assert set(FAULTS) == set(EXPECTED)


@pytest.mark.parametrize("fault", sorted(EXPECTED))
@pytest.mark.parametrize(("policy", "params"), [("fcfs", {}), ("chunked", {"chunk": 2})])
def test_verify_flags_fault(unit, fault, policy, params):
    trace = reference.load_trace(unit, "mixed")
    device = reference.device_profile(unit)
    run = reference.run_reference(unit, trace, policy, params, device, fault=fault)
    problems = verify_run(run, trace, device.to_json())
    assert problems, fault
    assert {p.kind for p in problems} == {ProblemKind.INCONSISTENT_STATS}
    assert problems[0].statistic == EXPECTED[fault]
    assert EXPECTED[fault].split(".")[-1] in problems[0].message
    clean = reference.run_reference(unit, trace, policy, params, device)
    assert verify_run(clean, trace, device.to_json()) == []


def _forcing(fault: str):
    """A runner that turns the fault switch on in the child, as a tampered lab would."""

    def runner(lab, files, trace, argv, limits):
        return run_in_process(lab, files, trace, [*argv, "--fault", fault], limits)

    runner.in_process = True
    return runner


@pytest.fixture(scope="module")
def fault_reports(unit):
    """The reference graded with each fault switch forced on in the (in-process) child."""
    return {
        fault: grade_submission(
            unit, unit.solutions_dir, cases=["fcfs-mixed", "chunked-mixed"], runner=_forcing(fault)
        )
        for fault in EXPECTED
    }


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_grader_reports_fault_as_inconsistent_stats(fault_reports, fault):
    report = fault_reports[fault]
    assert report.score == 0
    for case in report.cases:
        assert case.status is Status.INCONSISTENT_STATS
        assert EXPECTED[fault] in case.feedback
        assert f"fault switch {fault}" in case.feedback
