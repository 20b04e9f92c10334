"""Issue 35: a policy that changes its view, graded end to end (``docs/grading.md``, "A policy
that changes its view").

What the guard stops (an edit of a list of the view or of a sequence's token times, an
attribute assigned on a sequence or the view, a property set with ``object.__setattr__``) gets
the one sentence naming the function, on a public case and on a hidden one, with no traceback.
What it cannot stop in-process (writes behind it: ``object.__setattr__`` on a sequence's
fields, ``list.append`` on its token times) is rejected by the parent's replay with a named
reason, so the case earns nothing; a write to what the engine no longer reads (a batch the
policy kept after returning it) changes nothing of the run.
"""

from __future__ import annotations

import textwrap

import pytest

from grader.grading.grade import Status, grade_submission

PUBLIC, HIDDEN = "fcfs-mixed", "fcfs-mixed-relabelled"


def _submission(tmp_path, unit, body: str):
    """The reference policies with ``fcfs`` doing ``body`` (which may set ``answer``) around
    the reference's answer; ``state`` is a dict that lives as long as the run."""
    solution = (unit.solutions_dir / "policies.py").read_text(encoding="utf-8")
    source = solution + "\n\n_reference = fcfs\nstate = {}\n\n\ndef fcfs(view):\n"
    source += "    answer = _reference(view)\n" + textwrap.indent(textwrap.dedent(body), "    ")
    source += "\n    return answer\n"
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "policies.py").write_text(source, encoding="utf-8")
    return folder


# -- what the guard stops: one sentence, in public and hidden feedback --------------------------

STOPPED = {  # kind: (what fcfs does, what the sentence names on a public case)
    "token list append": (
        "if view.running:\n    view.running[0].token_times_ms.append(view.now_ms)",
        "changed its view (token_times_ms of request '",
    ),
    "token list clear": (
        "if view.running:\n    view.running[0].token_times_ms.clear()",
        "changed its view (token_times_ms of request '",
    ),
    "attribute of a request": (
        "if view.waiting:\n    view.waiting[0].prefilled = 0",
        "changed its view (prefilled of request '",
    ),
    "a view list": ("view.running.sort(key=lambda s: s.id)", "changed its view (view.running"),
    "a property behind the guard": (
        "if view.waiting:\n    object.__setattr__(view.waiting[0], 'remaining_prefill', 0)",
        "changed its view (property 'remaining_prefill' of 'Sequence' object has no setter)",
    ),
}


@pytest.mark.parametrize("kind", sorted(STOPPED))
def test_a_change_the_guard_stops_is_one_sentence_in_any_feedback(tmp_path, unit, kind):
    body, named = STOPPED[kind]
    report = grade_submission(unit, _submission(tmp_path, unit, body), cases=[PUBLIC, HIDDEN])
    public, hidden = sorted(report.cases, key=lambda c: c.id != PUBLIC)
    assert report.score == 0
    assert public.status is hidden.status is Status.CRASH, report.text(staff=True)
    assert f"fcfs() {named}" in public.feedback, public.feedback
    assert "diagnosis: changed-view" in public.feedback, public.feedback
    # a hidden case's feedback is the grader's own words: the catalogue entry's text
    assert "fcfs() in policies.py: changed its view (a list, a sequence" in hidden.feedback
    for case in (public, hidden):
        assert "Traceback" not in case.feedback, case.feedback


# -- what it cannot stop: writes behind it, rejected by the replay ------------------------------

ONCE = "if view.running and 'done' not in state:\n    state['done'] = True\n"
BEHIND = {  # kind: (what fcfs does once, the replay's named reason in the feedback)
    "token list appended with list.append": (  # at every call: the count passes its target
        "if view.running:\n    list.append(view.running[0].token_times_ms, view.now_ms)",
        "the timeline breaks a device rule (token count)",
    ),
    "token list replaced with object.__setattr__": (
        ONCE + "    object.__setattr__(view.running[0], 'token_times_ms', [])",
        "the timeline breaks a device rule (terminated request scheduled)",
    ),
    "prefill progress written with object.__setattr__": (
        "head = view.waiting[0] if view.waiting else None\n"
        "if head is not None and head.prefilled == 0 and head.prefill_target > 1:\n"
        "    object.__setattr__(head, 'prefilled', head.prefill_target - 1)\n"
        "    answer = _reference(view)",
        "the timeline breaks a device rule (prefill order)",
    ),
    "output length written with object.__setattr__": (
        ONCE + "    object.__setattr__(view.running[0], 'output_tokens', 50)",
        "the run file declares more work than its trace allows",
    ),
}


@pytest.mark.parametrize("kind", sorted(BEHIND))
def test_a_write_behind_the_guard_is_rejected_by_the_replay(tmp_path, unit, kind):
    """The child's run is what the written state made of it; the parent replays its event log
    against the trace and the device rules and names what breaks them: no points."""
    body, reason = BEHIND[kind]
    report = grade_submission(unit, _submission(tmp_path, unit, body), cases=[PUBLIC])
    (case,) = report.cases
    assert case.status is Status.INVALID_SCHEDULE, report.text(staff=True)
    assert report.score == 0
    assert reason in case.feedback, case.feedback


def test_a_kept_batch_written_after_it_ran_changes_nothing(tmp_path, unit):
    """The engine checks, runs and records its own copy of each batch (``engine._own``): the
    policy's object, written after the step ran, is not the run's record of it."""
    body = """
    kept = state.get("kept")
    if kept is not None:
        object.__setattr__(kept, "decode", ())
        object.__setattr__(kept, "prefill", ())
        for chunk in state.get("chunks", ()):
            object.__setattr__(chunk, "tokens", 10**6)
    state["kept"], state["chunks"] = answer, answer.prefill
    """
    report = grade_submission(unit, _submission(tmp_path, unit, body), cases=[PUBLIC, HIDDEN])
    assert report.score == report.max_score, report.text(staff=True)
