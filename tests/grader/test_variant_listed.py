"""Issue 50: unit 09's prefix and cancel constructions, listed request by request, are drawn
again per student as a seeded perturbation (``grader/traces/perturb.py``), and the fixed set
stays as it was."""

from __future__ import annotations

import json

import pytest
import servesim
from varianttools import SECRET, variant_of

from grader import reference
from grader.cases import load_grading
from grader.course import golden
from grader.labfolder import tree
from grader.plugins import load_file, load_plugin
from grader.traces.errors import SpecError
from grader.traces.mutants import list_mutants
from grader.traces.perturb import perturb_requests
from grader.traces.tracegen import load_yaml_or_json, trace_from_spec
from grader.traces.tracetools import trace_text
from grader.units import load_unit
from grader.variants import drawn, keys, store, strict

HIDDEN = ["cancel-heavy", "cancel-shared", "shared-mix", "shared-evict", "shared-preempt"]
HIDDEN += ["stream-cancel"]
PUBLIC = ["cancels", "shared-prefix", "evict"]

REQUESTS = [
    {"id": "a01", "arrivalMs": 5.0, "inputTokens": 100, "outputTokens": 1, "cancelMs": 0.5},
    {"id": "a02", "arrivalMs": 5.0, "inputTokens": 90, "outputTokens": 20,
     "prefix": [{"id": "sys0", "tokens": 64}, {"id": "doc", "tokens": 9}]},
    {"id": "a03", "arrivalMs": 9.0, "inputTokens": 64, "outputTokens": 2,
     "prefix": [{"id": "sys1", "tokens": 64}], "cancelMs": 300},
    {"id": "a04", "arrivalMs": 40.0, "inputTokens": 70, "outputTokens": 30,
     "prefix": [{"id": "sys0", "tokens": 32}]},
]  # fmt: skip
WIDE = {
    "arrivalScale": 0.6,
    "arrivalJitter": 0.9,
    "inputScale": 0.5,
    "outputScale": 0.3,
    "lengthJitter": 0.5,
    "cancelScale": 0.2,
    "cancelJitter": 0.9,
    "prefixScale": 1.3,
    "regroupShare": 1.0,
    "idPrefix": "z",
}


def _spec(name: str):
    return load_yaml_or_json(load_unit("unit09").traces_dir / "specs" / f"{name}.yaml")


@pytest.mark.parametrize("seed", range(30))
def test_a_perturbation_keeps_every_request_its_order_ties_and_shapes(seed):
    before = json.loads(json.dumps(REQUESTS))
    out = perturb_requests(REQUESTS, WIDE, seed, "t")
    assert before == REQUESTS  # the fixed requests are not touched
    assert [r["id"] for r in out] == ["z01", "z02", "z03", "z04"]
    times = [r["arrivalMs"] for r in out]
    assert times == sorted(times) and times[0] == times[1] and times[0] > 0
    assert out[0]["outputTokens"] == 1 and all(r["outputTokens"] >= 2 for r in out[1:])
    assert all(r["cancelMs"] > 0 for r in out if "cancelMs" in r)
    assert [("cancelMs" in r, "prefix" in r) for r in out] == [
        ("cancelMs" in r, "prefix" in r) for r in REQUESTS
    ]
    for new, old in zip(out[1:], REQUESTS[1:], strict=True):
        shared = sum(s["tokens"] for s in new["prefix"])
        assert new["prefix"][0]["id"] in {"sys0", "sys1"}
        own = old["inputTokens"] - sum(s["tokens"] for s in old["prefix"])
        assert (new["inputTokens"] > shared) == (own > 0)  # a prompt all prefix stays so
        for segment, was in zip(new["prefix"], old["prefix"], strict=True):
            assert segment["tokens"] % 16 == 0 or was["tokens"] % 16  # whole pages stay whole
    assert out == perturb_requests(REQUESTS, WIDE, seed, "t")


def test_identity_knobs_give_the_requests_back_and_a_seed_moves_them():
    assert perturb_requests(REQUESTS, {}, 1, "t") == REQUESTS
    moved = {json.dumps(perturb_requests(REQUESTS, WIDE, s, "t")) for s in range(5)}
    assert len(moved) == 5


def test_kept_requests_stay_as_they_are_and_keeping_moves_no_other_request():
    free = perturb_requests(REQUESTS, WIDE, 7, "t")
    kept = perturb_requests(REQUESTS, WIDE | {"keep": [1, 2]}, 7, "t")
    for new, old in zip(kept[:2], REQUESTS[:2], strict=True):  # all before them kept too
        assert new == old | {"id": "z" + old["id"][1:]}
    assert kept[2:] != REQUESTS[2:]
    for new, alone in zip(kept[2:], free[2:], strict=True):  # the same draws as without keep
        assert {k: v for k, v in new.items() if k != "arrivalMs"} == {
            k: v for k, v in alone.items() if k != "arrivalMs"
        }
    with pytest.raises(SpecError, match="knob 'keep': request 5 is past the 4 requests"):
        perturb_requests(REQUESTS, {"keep": [5]}, 1, "t")


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"arrivalSkew": 1}, "unknown perturbation knob 'arrivalSkew'"),
        ({"inputScale": 0}, "knob 'inputScale' must be a number > 0"),
        ({"arrivalJitter": 1}, r"knob 'arrivalJitter' must be a number in \[0, 1\)"),
        ({"regroupShare": 1.5}, r"knob 'regroupShare' must be a number in \[0, 1\]"),
        ({"prefixGrid": 0}, "knob 'prefixGrid' must be an integer >= 1"),
        ({"idPrefix": 3}, "knob 'idPrefix' must be a string"),
        ({"keep": [0]}, "knob 'keep' must be a list of request numbers >= 1"),
    ],
)
def test_a_bad_knob_is_one_error_naming_it(knobs, message):
    with pytest.raises(SpecError, match=message):
        perturb_requests(REQUESTS, knobs, 1, "where")


def test_a_listed_specs_vary_names_knobs_and_a_typo_is_refused():
    spec = {"name": "t", "requests": REQUESTS, "vary": {"arrivalScale": {"min": 0.5, "max": 2}}}
    one, two = (trace_from_spec(drawn.draw_spec(spec, k, "t")) for k in ("k1", "k2"))
    assert one["requests"] != two["requests"] and "vary" not in drawn.draw_spec(spec, "k1", "t")
    assert trace_from_spec(spec)["requests"] == REQUESTS  # the fixed trace ignores vary
    broken = dict(spec, requests=[{"id": "a", "arrivalMs": 0, "outputTokens": 2}])
    with pytest.raises(SpecError, match=r"listed requests are not a valid trace: .*inputTokens"):
        drawn.draw_spec(broken, "k", "t")
    typo = dict(spec, vary={"arrivalscale": {"set": 2}})
    with pytest.raises(SpecError, match="vary names 'arrivalscale', which is no perturbation knob"):
        drawn.draw_spec(typo, "k", "t")


def test_the_fixed_traces_ignore_vary_and_stay_the_shipped_bytes():
    """The specs' vary blocks and the builders leave the fixed set as it was: each hidden
    construction is its spec's listed requests, and its golden files name that trace."""
    unit = load_unit("unit09")
    for name in HIDDEN:
        spec = _spec(name)
        assert spec["vary"], name
        path = unit.traces_dir / "hidden" / f"{name}.json"
        assert path.read_text(encoding="utf-8") == trace_text(trace_from_spec(spec)), name
    varied = unit.doc["variants"]
    assert set(HIDDEN) <= set(varied["hidden"]) and set(PUBLIC) <= set(varied["public"])


def _files(variant, folders=("traces/hidden", "traces/golden")) -> dict[str, bytes]:
    out = {}
    for folder in folders:
        out |= {
            f"{folder}/{r}": p.read_bytes() for r, p in tree(variant.variant_dir / folder).items()
        }
    for rel in ("traces", "tests/expected"):
        out |= {f"lab/{rel}/{r}": p.read_bytes() for r, p in tree(variant.lab_dir / rel).items()}
    return out


def test_two_students_draw_their_own_constructions_and_one_student_the_same_bytes_twice(
    tmp_path, monkeypatch
):
    unit = load_unit("unit09")
    one, two = variant_of("unit09", "s001"), variant_of("unit09", "s002")
    for name in HIDDEN:
        texts = {(u.traces_dir / "hidden" / f"{name}.json").read_bytes() for u in (unit, one, two)}
        assert len(texts) == 3, name
    for name in PUBLIC:
        texts = {(u.lab_dir / "traces" / f"{name}.json").read_bytes() for u in (unit, one, two)}
        assert len(texts) == 3, name
    on_them = [c for c in load_grading(unit).cases if c.trace in HIDDEN + PUBLIC]
    assert len(on_them) >= 20
    for case in on_them:  # each golden run is the reference's on the student's own trace
        mine, fixed = golden.load_golden(one, case), golden.load_golden(unit, case)
        assert mine["trace"]["sha256"] != fixed["trace"]["sha256"], case.id
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "again"))
    again = store.variant_unit(unit, keys.variant_key(SECRET, "s001"))
    assert again.variant_dir != one.variant_dir and _files(again) == _files(one)


def _within_step_hits(run: dict, step: int) -> list[str]:
    """The ids that hit, in ``step``, a page another start fills in that same step."""
    event, taken, hits = run["events"][step], set(), []
    for op, rid, page, generation, _refs in event.get("pageOps") or []:
        if op == "take":
            taken.add((page, generation))
        elif op == "hit" and (page, generation) in taken:
            hits.append(rid)
    return hits


def test_cancel_shared_keeps_its_within_step_hit_in_every_draw():
    """``keep`` holds cancel-shared's first four requests as the fixed trace has them, so the
    step in which one start hits the pages another start fills (the case that
    ``prefix_hit_before_step`` must lose points on) happens in every variant."""
    unit = load_unit("unit09")
    case = load_grading(unit).by_id("prefix-paged-cancel-b256")
    fixed = load_yaml_or_json(unit.traces_dir / "specs" / "cancel-shared.yaml")
    assert fixed["vary"]["keep"] == {"set": [1, 2, 3, 4]}
    assert _within_step_hits(golden.load_golden(unit, case)["run"], 2)
    for student in ("s001", "s002"):
        variant = variant_of("unit09", student)
        trace = json.loads((variant.traces_dir / "hidden" / "cancel-shared.json").read_text())
        for new, old in zip(trace["requests"][:4], fixed["requests"][:4], strict=True):
            assert {k: v for k, v in new.items() if k != "id"} == {
                k: v for k, v in old.items() if k != "id"
            }
        run = golden.load_golden(variant, case)["run"]
        assert _within_step_hits(run, 2), student
    mutant = [m for m in list_mutants(unit) if m.name == "prefix_hit_before_step"]
    assert mutant and strict._kills(variant, mutant[0], [case.id])  # the case it stays for


def test_every_request_the_public_cancels_trace_cancels_is_cancelled_in_every_draw():
    """The lab's public test counts ten cancelled requests on ``cancels`` under the reference
    ``cancel_aware``; a student's own ``cancels`` must keep that true (200 draws)."""
    unit = load_unit("unit09")
    builders = load_plugin(unit, "public_traces.py", "variant builder")
    case = load_grading(unit).by_id("cancel-aware-cancels")
    device, params = golden.case_device(unit, case), {"budget": 128}
    for seed in range(200):
        doc = builders.cancels(seed=seed)
        trace = servesim.parse_trace(json.loads(json.dumps(doc)), source=f"seed {seed}")
        run = reference.run_reference(unit, trace, "cancel_aware", params, device)
        cancelled = [r["id"] for r in run["requests"] if r["status"] == "cancelled"]
        assert cancelled == [r["id"] for r in doc["requests"] if "cancelMs" in r], seed
        assert len(cancelled) == 10


def test_the_public_evict_trace_keeps_what_the_handout_says_in_every_draw():
    """The handout names ``evict``'s three 80-token system prompts and its two client cancels;
    a student's own ``evict`` keeps both under the reference, and the prefix hits (200 draws)."""
    unit = load_unit("unit09")
    builders = load_plugin(unit, "public_traces.py", "variant builder")
    case = load_grading(unit).by_id("prefix-paged-evict-b128-m24")
    device = golden.case_device(unit, case)
    for seed in range(200):
        doc = builders.evict(seed=seed)
        prefixes = {(p["id"], p["tokens"]) for r in doc["requests"] for p in r["prefix"]}
        assert len(prefixes) == 3 and {n for _, n in prefixes} == {80}, seed
        trace = servesim.parse_trace(json.loads(json.dumps(doc)), source=f"seed {seed}")
        for policy in ("cancel_aware", "prefix_paged"):
            run = reference.run_reference(unit, trace, policy, {"budget": 128}, device)
            cancelled = [r["id"] for r in run["requests"] if r["status"] == "cancelled"]
            assert cancelled == [r["id"] for r in doc["requests"] if "cancelMs" in r], seed
            assert len(cancelled) == 2, (seed, policy)
        hits = [op for e in run["events"] for op in e.get("pageOps") or [] if op[0] == "hit"]
        assert hits, seed


def test_every_students_evict_recomputes_in_the_notebooks_recompute_run():
    """Deliverable 2 of unit 09's notebook names its run on ``evict`` (the reference
    ``cancel_aware`` on ``notebook_setup.D2``'s device) as the one that recomputes; on 28 of
    200 first draws it recomputed nothing, so ``evict`` draws again until it does (200 seeds,
    measured as the answer key measures: the reference ``prefill_amplification``)."""
    unit = load_unit("unit09")
    builders = load_plugin(unit, "public_traces.py", "variant builder")
    keys = load_file(unit.unit_dir / "notebook" / "answer_keys.py")
    measure = reference.solution_module(unit, "measure.py")
    for seed in range(200):
        trace = servesim.parse_trace(builders.evict(seed=seed), source=f"seed {seed}")
        ratio = measure.prefill_amplification(keys.recompute_run(unit, trace))
        assert ratio.num > ratio.den, seed
