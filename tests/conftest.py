"""Shared fixtures for the repo tests (helpers live in labtools.py).

``scripts/test.sh`` runs the suite in two passes: every test not marked ``serial`` on all cores
(pytest-xdist), then the ``serial`` ones one at a time. A test is ``serial`` when it cannot share
the machine (it changes something other tests read, or it measures time), and says why.
"""

import os
import shutil
import tempfile

import pytest
from labtools import UNIT, copy_lab

from grader.checkcache import CACHE_ENV

_OWN_CACHE: list[str] = []


def pytest_configure(config):
    """unit.yaml's cache (``grader.checkcache``) in a folder of this run, not the user's."""
    if not os.environ.get(CACHE_ENV):  # xdist workers inherit the controller's
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="infralab-test-cache-"))
        os.environ[CACHE_ENV] = _OWN_CACHE[0]


def pytest_unconfigure(config):
    for folder in _OWN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


# The files whose tests take longest (pytest --durations), longest first. They run first, so that
# no worker is left with one of them while the other has nothing to do; pytest-xdist hands out
# tests in this order (after its groups, which go first, the largest first).
LONGEST_FIRST = (
    "tests/nbgrader/test_answer_keys_unit08.py",
    "tests/unit08/test_u08_hidden_grading.py",
    "tests/sandbox/test_adversarial08.py",
    "tests/site/test_accessibility.py",
    "tests/sandbox/test_adversarial.py",
    "tests/grader/test_fastpath_paged.py",
    "tests/grader/test_diagnosis.py",
    "tests/site/test_browser.py",
    "tests/unit08/test_u08_protocol.py",
    "tests/test_run_tests.py",
    "tests/unit08/test_u08_staff_cli.py",
    "tests/site/test_browser_unit08.py",
    "tests/sandbox/test_release.py",
    "tests/sandbox/test_batch_hardening.py",
)


# The fast tier (``bash scripts/test.sh --fast``, marker ``fast``): for every package of the
# project, test files of its own, chosen by measured durations (pytest --durations=0 per file,
# 2026-12-03): the files in FAST, less the tests in SLOW_IN_FAST (each took 5 s or more of a
# 2-core machine). About a fifth of the suite's tests; a few minutes on 2 cores.
# tests/test_fast_tier.py checks that every package has an entry and that each file imports
# (or, for a lab, names) it.
FAST = {
    "servesim": (
        "tests/test_engine_general.py",
        "tests/test_engine_unit08.py",
        "tests/test_engine_properties.py",
        "tests/test_compact.py",
        "tests/test_contract.py",
        "tests/test_context_costs.py",
        "tests/test_swap.py",
        "tests/test_faults.py",
        "tests/test_fault_table.py",
    ),
    "servesim.runview": ("tests/test_view.py",),
    "grader": (
        "tests/grader/test_case_options.py",
        "tests/grader/test_checkcache.py",
        "tests/grader/test_schemas.py",
        "tests/test_import_layers.py",
    ),
    "grader.cli": ("tests/grader/test_cli_inputs.py",),
    "grader.course": ("tests/nbgrader/test_nbcheck.py", "tests/grader/test_golden.py"),
    "grader.diagnosis": ("tests/grader/test_diagnosis.py",),
    "grader.fastpath": ("tests/grader/test_fastpath.py",),
    "grader.grading": (
        "tests/grader/test_hidden_feedback.py",
        "tests/grader/test_report_order.py",
        "tests/grader/test_verdict_memo.py",
    ),
    "grader.sandbox": ("tests/sandbox/test_sandbox.py", "tests/sandbox/test_template.py"),
    "grader.sitebuild": (
        "tests/site/test_charts.py",
        "tests/site/test_glossary_formula.py",
        "tests/site/test_plugins.py",
        "tests/site/test_frequency.py",
        "tests/site/test_handout.py",
    ),
    "grader.traces": ("tests/grader/test_tracegen.py", "tests/grader/test_metamorphic.py"),
    "grader.verify": (
        "tests/grader/test_verify.py",
        "tests/grader/test_runschema.py",
        "tests/grader/test_fault_detection.py",
    ),
    "realdevice": (
        "tests/runner/test_model.py",
        "tests/runner/test_fit.py",
        "tests/runner/test_preemption.py",
    ),
    "labs/unit07": ("tests/test_starter.py",),
    "labs/unit08": ("tests/unit08/test_u08_schemas.py", "tests/unit08/test_u08_lab.py"),
}
SLOW_IN_FAST = (
    "tests/test_compact.py::test_ta_command_same_file_from_either_engine",
    "tests/test_compact.py::test_unit08_round_trip",
    "tests/test_compact.py::test_unit08_random_round_trip",
    "tests/test_contract.py::test_broken_policy_answer_is_one_sentence",
    "tests/test_fault_table.py::test_each_fault_changes_a_printed_cell",
    "tests/grader/test_golden.py::test_a_batch_with_a_missing_golden_file_stops_before_grading",
    "tests/grader/test_golden.py::test_check_catches_changed_trace_and_writes_nothing",
    "tests/grader/test_diagnosis.py::test_entry_text_reaches_the_student_on_a_hidden_case",
    "tests/grader/test_diagnosis.py::test_mutant_without_entry_fails_a_public_test",
    "tests/grader/test_fastpath.py::test_azure_budgeted",
    "tests/grader/test_fastpath.py::test_azure_unit07",
    "tests/grader/test_fastpath.py::test_context_costs_run_on_the_lab_engine",
    "tests/grader/test_fastpath.py::test_swap_devices_run_on_the_lab_engine",
    "tests/grader/test_hidden_feedback.py::test_hidden_feedback_depends_on_the_status_and_note_only",
    "tests/grader/test_runschema.py::test_the_shortcut_finds_the_plain_validators_errors",
    "tests/sandbox/test_sandbox.py::test_batch_child_killed_midway_reruns_the_remaining_cases",
    "tests/sandbox/test_sandbox.py::test_correct_solution_runs_and_reports_mode",
    "tests/runner/test_model.py::test_chunked_prefill_gives_the_same_tokens",
    "tests/test_starter.py::test_public_tests_fail_on_pristine_starter",
    "tests/test_starter.py::test_public_tests_pass_with_solutions",
    "tests/test_starter.py::test_public_tests_show_first_differing_token",
    "tests/unit08/test_u08_lab.py::test_public_tests_green_with_solutions_from_python3_alone",
)
_FAST_FILES = {path for paths in FAST.values() for path in paths}


def _fast(nodeid: str) -> bool:
    if nodeid.split("::", maxsplit=1)[0] not in _FAST_FILES:
        return False
    name = nodeid.split("[", maxsplit=1)[0]  # every parameter of a slow test is slow
    return name not in SLOW_IN_FAST


def _rank(item) -> int:
    path = item.nodeid.split("::")[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    for item in items:
        mark = item.get_closest_marker("serial")
        if mark is not None and not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.serial needs reason=...")
        if _fast(item.nodeid):
            item.add_marker(pytest.mark.fast)
    items.sort(key=_rank)  # stable: the rest keep their order


@pytest.fixture(scope="session")
def unit():
    return UNIT


@pytest.fixture(scope="session")
def solved_lab(tmp_path_factory):
    return copy_lab(tmp_path_factory.mktemp("solved") / "lab", solution=True)
