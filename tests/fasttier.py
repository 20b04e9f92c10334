"""The fast tier (``bash scripts/test.sh --fast``, marker ``fast``): which tests it runs.

tests/conftest.py marks every test for which ``is_fast`` holds; tests/test_fast_tier.py checks
that every package of the project has fast tests of its own.
"""

from __future__ import annotations

# For every package of the project, test files of its own, chosen by measured durations
# (pytest --durations=0 per file, 2026-12-03): the files in FAST, less the tests in SLOW_IN_FAST
# (each took 5 s or more on the shared 2-core machine where they were measured). About 520
# tests, a third of the suite, about 100 CPU seconds with collection.
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
        "tests/test_engine_cancel.py",
        "tests/test_prefix_cache.py",
        "tests/test_streaming.py",
        "tests/test_htmlsafe.py",
        "tests/test_servesim_docstrings.py",
        "tests/test_decision.py",
        "tests/test_next_rule_component.py",
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
    "grader.fastpath": (
        "tests/grader/test_fastpath.py",
        "tests/grader/test_fastpath_budgeted.py",
        "tests/grader/test_tracecolumns.py",
    ),
    "grader.grading": (
        "tests/grader/test_hidden_feedback.py",
        "tests/grader/test_report_order.py",
        "tests/grader/test_verdict_memo.py",
    ),
    "grader.sandbox": ("tests/sandbox/test_sandbox.py", "tests/sandbox/test_template.py"),
    "grader.similarity": ("tests/grader/test_similarity.py",),
    "grader.variants": ("tests/grader/test_variants.py",),
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
        "tests/grader/test_replay_stream.py",
    ),
    "grader.serve": ("tests/serve/test_serve_parts.py",),
    "realdevice": (
        "tests/runner/test_model.py",
        "tests/runner/test_fit.py",
        "tests/runner/test_preemption.py",
    ),
    "labs/unit07": ("tests/test_starter.py",),
    "labs/unit08": ("tests/unit08/test_u08_schemas.py", "tests/unit08/test_u08_lab.py"),
    "labs/unit09": ("tests/unit09/test_u09_lab.py",),
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
    "tests/grader/test_variants.py::test_each_student_draws_their_own_traces_and_the_fixed_set_stays",
    "tests/grader/test_variants.py::test_a_variants_golden_files_are_the_reference_on_its_own_traces",
    "tests/grader/test_runschema.py::test_the_shortcut_finds_the_plain_validators_errors",
    "tests/sandbox/test_sandbox.py::test_batch_child_killed_midway_reruns_the_remaining_cases",
    "tests/sandbox/test_sandbox.py::test_correct_solution_runs_and_reports_mode",
    "tests/runner/test_model.py::test_chunked_prefill_gives_the_same_tokens",
    "tests/serve/test_serve_parts.py::test_the_saved_byte_tokenizer_encodes_as_the_servers",
    "tests/serve/test_serve_parts.py::test_serve_without_torch_names_the_extra",
    "tests/test_starter.py::test_public_tests_fail_on_pristine_starter",
    "tests/test_starter.py::test_public_tests_pass_with_solutions",
    "tests/test_starter.py::test_public_tests_show_first_differing_token",
    "tests/unit08/test_u08_lab.py::test_public_tests_green_with_solutions_from_python3_alone",
)
_FAST_FILES = {path for paths in FAST.values() for path in paths}


def is_fast(nodeid: str) -> bool:
    """Whether the test ``nodeid`` is in the fast tier (tests/conftest.py marks it ``fast``)."""
    if nodeid.split("::", maxsplit=1)[0] not in _FAST_FILES:
        return False
    name = nodeid.split("[", maxsplit=1)[0]  # every parameter of a slow test is slow
    return name not in SLOW_IN_FAST
