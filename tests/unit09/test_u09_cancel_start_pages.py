"""``cancel_aware``'s docstring says a request that starts takes ``pages_for(tokens)`` (its
chunk's pages) out of ``free``, and that taking the whole prompt's pages instead makes the same
step: a chunk shorter than the prompt uses up the budget, so nothing else starts after it. No
case can tell the two apart (none is added); this holds the claim on every trace of the
cancellation cases, at budgets small enough to cut prompts into chunks and on a small pool."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import replace

import pytest

from grader import reference
from grader.cases import load_grading
from grader.units import load_unit

UNIT09 = load_unit("unit09")
CHUNK = "free -= device.pages_for(tokens)"
WHOLE = "free -= device.pages_for(seq.prefill_target)"


def whole_prompt_variant():
    """The reference ``cancel_aware`` with a start taking its whole prompt's pages."""
    solution = reference.solution_policies(UNIT09)
    source = textwrap.dedent(inspect.getsource(solution.cancel_aware))
    assert source.count(CHUNK) == 1, "the reference no longer takes a chunk's pages this way"
    space = dict(vars(solution))
    exec(source.replace(CHUNK, WHOLE), space)
    return solution, space["cancel_aware"]


TRACES = sorted(
    {case.trace for case in load_grading(UNIT09).cases if case.policy == "cancel_aware"}
)


@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize("budget,pages", [(16, None), (48, 20), (128, None), (256, 20)])
def test_taking_the_whole_prompts_pages_makes_the_same_run(trace, budget, pages, monkeypatch):
    solution, variant = whole_prompt_variant()
    device = reference.device_profile(UNIT09)
    device = device if pages is None else replace(device, kv_pages=pages)
    loaded = reference.load_trace(UNIT09, trace)

    def run():
        return reference.run_reference(UNIT09, loaded, "cancel_aware", {"budget": budget}, device)

    own = run()
    monkeypatch.setattr(solution, "cancel_aware", variant)
    assert run() == own
    chunked = [c for e in own["events"] for c in e["prefill"] if c["fromToken"] == 0]
    assert budget > 128 or any(
        c["tokens"] < r["inputTokens"]
        for c in chunked
        for r in own["requests"]
        if r["id"] == c["id"]
    ), "no prompt is cut into chunks: the two counts were never different"
