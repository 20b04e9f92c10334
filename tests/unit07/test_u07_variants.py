"""Issue 50 for unit 07's lesson traces: ``mixed`` and ``prefill-only`` are drawn again per
student (``labs/unit07/public_traces.py``). With no seed each builder gives the shipped file byte
for byte (the lesson and its figures read those); every draw keeps the trace's roles and what
the notebook, the handout and the lab's public tests claim about it, and is never the shipped
trace; the public tests pass on a student's lab."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest
import servesim
from labtools import copy_lab
from varianttools import variant_of

from grader import reference
from grader.course.nbcheck import by_id, max_gap
from grader.plugins import load_file
from grader.units import load_unit

UNIT = load_unit("unit07")
BUILDERS = load_file(UNIT.unit_dir / "public_traces.py")
SEEDS = range(250)
CHUNK = {"chunk": 2}  # the notebook's, the public tests' and the lesson's


def shipped(name: str) -> str:
    return (UNIT.lab_dir / "traces" / f"{name}.json").read_text(encoding="utf-8")


def runs(doc: dict, **device) -> dict[str, dict]:
    """The reference's fcfs and chunked (``--chunk 2``) run entries on ``doc``."""
    trace = servesim.parse_trace(json.loads(json.dumps(doc)), source=doc["name"])
    profile = reference.device_profile(UNIT, **device)
    return {
        "fcfs": reference.run_reference(UNIT, trace, "fcfs", {}, profile),
        "chunked": reference.run_reference(UNIT, trace, "chunked", CHUNK, profile),
    }


def inside(event: dict, start: float, end: float) -> bool:
    return start <= event["startMs"] and event["endMs"] <= end


@pytest.mark.parametrize(
    ("name", "builder"),
    [
        ("mixed", BUILDERS.mixed),
        ("prefill-only", BUILDERS.prefill_only),
        ("unseen", BUILDERS.unseen),
    ],
)
def test_no_seed_is_the_shipped_file_byte_for_byte(name, builder):
    assert BUILDERS.render(builder()) == shipped(name)
    assert BUILDERS.render(builder(seed=None)) == shipped(name)


def check_mixed(doc: dict) -> None:
    """Every claim about ``mixed`` that the notebook, the handout and the public tests make."""
    a, l_, s = doc["requests"]
    assert [r["id"] for r in doc["requests"]] == ["A", "L", "S"]
    assert a["arrivalMs"] == 0 < l_["arrivalMs"] < s["arrivalMs"]
    assert a["inputTokens"] <= CHUNK["chunk"] < l_["inputTokens"], "A's prompt fits one chunk"
    assert l_["inputTokens"] > 4 * s["inputTokens"], "L's prompt is long, S's short"
    assert a["outputTokens"] > max(l_["outputTokens"], s["outputTokens"]), "A's output is long"
    got = runs(doc)
    fcfs, chunked = by_id(got["fcfs"]), by_id(got["chunked"])
    assert l_["arrivalMs"] < fcfs["A"]["tokenTimesMs"][-1], "L arrives while A streams"
    assert s["arrivalMs"] < fcfs["L"]["tokenTimesMs"][0], "S arrives while L is in prefill"
    # A's TTFT is the same; its longest ITL is shorter with chunks; L and S start later.
    assert fcfs["A"]["ttftMs"] == chunked["A"]["ttftMs"]
    a_fcfs, a_chunked = fcfs["A"]["tokenTimesMs"], chunked["A"]["tokenTimesMs"]
    assert max_gap(a_chunked) < max_gap(a_fcfs)
    assert chunked["L"]["ttftMs"] > fcfs["L"]["ttftMs"]
    assert chunked["S"]["ttftMs"] > fcfs["S"]["ttftMs"]
    # fcfs: A's longest ITL spans the whole prefills of L and S (the public part 1 test).
    events = got["fcfs"]["events"]
    assert [(c["id"], c["fromToken"]) for c in events[0]["prefill"]] == [("A", 0)]
    start, end = max(zip(a_fcfs, a_fcfs[1:]), key=lambda pair: pair[1] - pair[0])
    others = [e for e in events if {c["id"] for c in e["prefill"]} & {"L", "S"}]
    assert others and all(inside(e, start, end) for e in others)
    # chunked: between two tokens of A, one decode and one chunk at most (public part 2 test).
    for earlier, later in zip(a_chunked, a_chunked[1:]):
        chunks = [
            e for e in got["chunked"]["events"] if e["prefill"] and earlier <= e["startMs"] < later
        ]
        assert len(chunks) <= 1


def test_every_mixed_draw_keeps_the_roles_and_the_teaching_point():
    check_mixed(BUILDERS.mixed())  # the claims are the lesson's, on the shipped trace too
    drawn = set()
    for seed in SEEDS:
        doc = BUILDERS.mixed(seed=seed)
        assert BUILDERS.render(doc) != shipped("mixed"), seed
        assert doc == BUILDERS.mixed(seed=seed)  # the same seed, the same trace
        check_mixed(doc)
        drawn.add(BUILDERS.render(doc))
    assert len(drawn) > len(SEEDS) * 0.9  # the draws spread out


def test_a_mixed_draw_of_the_shipped_requests_is_drawn_again():
    seed = next(s for s in range(10**6) if BUILDERS.draw_mixed(random.Random(s)) == BUILDERS.MIXED)
    doc = BUILDERS.mixed(seed=seed)
    assert BUILDERS.render(doc) != shipped("mixed")
    check_mixed(doc)


def check_prefill_only(doc: dict) -> int:
    """The counterexample's claims; returns the prompt's length."""
    ((request),) = doc["requests"]
    assert request["outputTokens"] == 1, "P never decodes"
    with_overhead, without = runs(doc), runs(doc, overhead_ms=0.0)
    done = {p: run["summary"]["allDoneMs"] for p, run in with_overhead.items()}
    done_0 = {p: run["summary"]["allDoneMs"] for p, run in without.items()}
    assert done["chunked"] > done["fcfs"], "chunking only adds overhead"
    assert done_0["chunked"] == done_0["fcfs"], "without overhead, the same finish"
    subs = {p: run["summary"]["prefillSubmissions"] for p, run in with_overhead.items()}
    assert subs["fcfs"] == 1 < subs["chunked"] == math.ceil(request["inputTokens"] / 2)
    assert with_overhead["fcfs"]["summary"]["submissions"] == 1
    return request["inputTokens"]


def test_every_prefill_only_draw_keeps_the_counterexample_and_every_length_is_drawn():
    assert check_prefill_only(BUILDERS.prefill_only()) == 12
    prompts = set()
    for seed in SEEDS:
        doc = BUILDERS.prefill_only(seed=seed)
        assert BUILDERS.render(doc) != shipped("prefill-only"), seed
        prompts.add(check_prefill_only(doc))
    assert prompts == set(BUILDERS.PREFILL_ONLY_INPUT) and 12 not in prompts


def test_the_public_tests_pass_on_two_students_labs_and_their_traces_differ(tmp_path):
    """Each student's lab (their traces and expected snapshots, the reference's policies.py):
    the lab's own public tests pass with python3 alone."""
    texts = {name: {shipped(name)} for name in ("mixed", "prefill-only")}
    for student in ("s001", "s002"):
        variant = variant_of("unit07", student)
        lab = copy_lab(tmp_path / student, True, variant)
        for name, seen in texts.items():
            seen.add((lab / "traces" / f"{name}.json").read_text(encoding="utf-8"))
        done = subprocess.run(
            [sys.executable, "-I", "-S", "run_tests.py"],
            cwd=lab, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert " passed" in done.stdout.splitlines()[-1]
    assert all(len(seen) == 3 for seen in texts.values())
