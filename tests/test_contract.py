"""Contracts of what the lab reads and what a policy returns (servesim/fields.py,
servesim/contract.py): a misspelt field in a trace, device profile, tier or protocol names the
field and the known one it probably means, in the lab and in the staff tools; a policy answer
of the wrong kind, or a policy that changes its view, stops the run with one sentence naming
the function, what came back and what was expected, and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from labtools import copy_lab, simulate_cli
from servesim import DeviceProfile, TraceError, parse_trace
from servesim.protocol import ProtocolError, parse_protocol
from servesim.tiers import TierError, parse_tier

from grader.units import REPO_ROOT, load_unit

UNIT08 = load_unit("unit08")
REQUEST = {"id": "r3", "arrivalMs": 0, "inputTokens": 4, "outputTokens": 2}


@pytest.mark.parametrize(
    ("typo", "meant"), [("deadlinMs", "deadlineMs"), ("maxOutputTokns", "maxOutputTokens")]
)
def test_misspelt_request_field_names_the_closest(typo, meant):
    doc = {"name": "t", "requests": [{**REQUEST, typo: 5}]}
    with pytest.raises(TraceError) as info:
        parse_trace(doc, source="t.json")
    assert str(info.value) == (
        f"t.json: request 'r3': unknown field '{typo}' (did you mean '{meant}'?)"
    )


def test_known_optional_fields_still_pass():
    doc = {"requests": [{**REQUEST, "deadlineMs": 5, "maxOutputTokens": 3, "tenant": "a"}]}
    (request,) = parse_trace(doc).requests
    assert (request.deadline_ms, request.max_output_tokens, request.tenant) == (5.0, 3, "a")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"kvPage": 64}, "unknown field 'kvPage' (did you mean 'kvPages'?)"),
        ({"device": {"overheadMS": 0}}, "unknown field 'overheadMS' (did you mean 'overheadMs'?)"),
        (
            {"device": {}, "descriptoin": "x"},
            "unknown field 'descriptoin' (did you mean 'description'?)",
        ),
    ],
)
def test_misspelt_device_profile_field(doc, message):
    with pytest.raises(ValueError) as info:
        DeviceProfile.from_file(doc, source="p.json")
    assert str(info.value) == f"p.json: {message}"


def test_misspelt_tier_field():
    path = sorted((UNIT08.lab_dir / "tiers").glob("*.json"))[0]
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pricePerHours"] = doc.pop("pricePerHour")
    with pytest.raises(
        TierError, match=r"unknown field 'pricePerHours' \(did you mean 'pricePerHour'\?\)"
    ):
        parse_tier(doc, "tier.json")


def test_misspelt_protocol_field_names_its_place():
    doc = json.loads((UNIT08.lab_dir / "protocols" / "lesson.json").read_text(encoding="utf-8"))
    doc["slo"]["ttftMS"] = doc["slo"].pop("ttftMs", 1000)
    with pytest.raises(ProtocolError) as info:
        parse_protocol(doc, "lesson.json")
    assert "'slo': unknown field 'ttftMS' (did you mean 'ttftMs'?)" in str(info.value)


def test_lab_device_profile_typo_is_one_line(tmp_path):
    lab = copy_lab(tmp_path / "lab", solution=True)
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"device": {"prefillMsPerTokn": 1}}))
    done = simulate_cli(lab, "--trace", "mixed", "--device-profile", str(profile))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "unknown field 'prefillMsPerTokn' (did you mean 'prefillMsPerToken'?)" in done.stderr


def test_staff_simulate_says_the_same_as_the_lab(tmp_path):
    trace = tmp_path / "typo.json"
    trace.write_text(json.dumps({"requests": [{**REQUEST, "deadlinMs": 5}]}))
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "simulate", "--unit", "unit08", "--reference",
         "--trace", str(trace), "--policy", "paged"],
        capture_output=True, text=True, check=False, timeout=120, cwd=REPO_ROOT,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "request 'r3': unknown field 'deadlinMs' (did you mean 'deadlineMs'?)" in done.stderr


@pytest.mark.parametrize("unit_id", ["unit07", "unit08"])
def test_published_trace_schema_refuses_unknown_fields(unit_id):
    schema = json.loads(
        (load_unit(unit_id).lab_dir / "schemas" / "trace.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate({"requests": [{**REQUEST, "deadlineMs": 5}]}, schema)
    for doc in ({"requests": [{**REQUEST, "deadlinMs": 5}]}, {"requests": [REQUEST], "x": 1}):
        with pytest.raises(jsonschema.ValidationError) as info:
            jsonschema.validate(doc, schema)
        assert info.value.validator == "additionalProperties"
    for path in (load_unit(unit_id).lab_dir / "traces").glob("*.json"):
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)


# -- what a policy returns --------------------------------------------------------------------

IMPORTS = "from servesim import Batch, PrefillChunk"
_HEAD = "head = view.waiting[0]"
BROKEN = {
    "float tokens": (
        f"{_HEAD}\n    return Batch(prefill=[PrefillChunk(head.id, head.remaining_prefill / 1)])",
        "fcfs() returned a Batch whose prefill chunk for 'A' has tokens of type float (",
        "expected an int number of prompt tokens",
    ),
    "tuple": (
        f"{_HEAD}\n    return Batch.prefill_of(head, head.remaining_prefill), 1",
        "fcfs() returned tuple ((Batch(",
        "expected a Batch",
    ),
    "sequences for ids": (
        "return Batch(decode=list(view.waiting))",
        "fcfs() returned a Batch whose decode holds Sequence (Sequence(id='A'",
        "expected a list of request ids (str)",
    ),
    "a view for a list": (
        "return Batch(decode=view.waiting)",
        "fcfs() returned a Batch whose decode holds Sequence (",
        "expected a list of request ids (str)",
    ),
    "one id as a string": (
        f"{_HEAD}\n    return Batch(decode=head.id)",
        "fcfs() returned a Batch whose decode is str ('A')",
        "expected a list of request ids (str)",
    ),
    "a dict for a chunk": (
        f"{_HEAD}\n    return Batch(prefill=[{{'id': head.id, 'tokens': 1}}])",
        "fcfs() returned a Batch whose prefill holds dict (",
        "expected a list of PrefillChunk(id, tokens)",
    ),
    "unknown id": (
        f"{_HEAD}\n    return Batch(prefill=[PrefillChunk(str(head), 1)])",
        "fcfs() returned a Batch whose prefill names str (",
        "which no request of the trace has; expected ids of the requests in the view",
    ),
    "changes its view": (
        f"{_HEAD}\n    head.prefilled += 1\n    return Batch.prefill_of(head, 1)",
        "fcfs() changed its view (prefilled of request 'A')",
        "expected a policy that only reads the view",
    ),
    "changes its view and hides the error": (
        f"{_HEAD}\n    try:\n        head.prefilled = 0\n    except Exception:\n        pass\n"
        "    return Batch.prefill_of(head, 1)",
        "fcfs() changed its view (prefilled of request 'A')",
        "expected a policy that only reads the view",
    ),
    "assigns to the frozen view": (
        "view.now_ms = 0\n    return None",
        "fcfs() changed its view (cannot assign to field 'now_ms')",
        "expected a policy that only reads the view",
    ),
}


@pytest.fixture(scope="module")
def contract_lab(tmp_path_factory) -> Path:
    return copy_lab(tmp_path_factory.mktemp("contract") / "lab", solution=True)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_policy_answer_is_one_sentence(contract_lab, case):
    body, got, expected = BROKEN[case]
    policies = contract_lab / "policies.py"
    original = policies.read_text(encoding="utf-8")
    try:
        policies.write_text(
            f"{original}\n\n{IMPORTS}\n\n\ndef fcfs(view):\n    {body}\n",
            encoding="utf-8",
        )
        done = simulate_cli(contract_lab, "--trace", "mixed", "--policy", "fcfs")
    finally:
        policies.write_text(original, encoding="utf-8")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert got in lines[0] and expected in lines[0], lines[0]


def test_admission_hook_must_answer_a_bool():
    from servesim import contract
    from servesim.engine import PolicyError
    from servesim.policycall import guarded

    def admit(seq, view):
        return 1

    with pytest.raises(PolicyError) as info:
        guarded(admit, None, contract.admit_problem)(None, None)
    assert str(info.value) == "admit() returned int (1); expected True or False"
    assert guarded(lambda seq, view: False, None, contract.admit_problem)(None, None) is False


def test_the_guard_is_off_between_calls():
    """The engine's own changes to a sequence go through once the policy has returned."""
    from servesim import contract
    from servesim.sequence import Sequence

    seq = Sequence("a", 0.0, 1, 1, 0)
    contract.GUARD.start("p()")
    with pytest.raises(contract.PolicyError):
        seq.prefilled = 1
    assert contract.GUARD.stop() is not None
    seq.prefilled = 1
    assert seq.prefilled == 1


# -- a policy that changes its view, in either unit -------------------------------------------

HEAD = "view.waiting[0]"
MUTATIONS = {  # kind: (what the policy does first, what the message names)
    "append": ("view.waiting.append(view.waiting[0])", "(view.waiting: .append())"),
    "item assignment": ("view.waiting[0] = view.waiting[0]", "(view.waiting: an item assigned)"),
    "sort": ("view.waiting.sort(key=lambda s: s.id)", "(view.waiting: .sort())"),
    "attribute of a request": (f"{HEAD}.prefill_target = 1", "(prefill_target of request '"),
    "token times of a request": (
        f"{HEAD}.token_times_ms.append(0.0)",
        "(token_times_ms of request '",
    ),
    "token times cleared": (f"{HEAD}.token_times_ms.clear()", "(token_times_ms of request '"),
    "an attribute deleted": (f"del {HEAD}.prefilled", "(prefilled of request '"),
    "the id mapping": ("view.live['x'] = view.waiting[0]", "(view.live: 'mappingproxy' object"),
    "a property set behind the guard": (
        f"object.__setattr__({HEAD}, 'remaining_prefill', 0)",
        "(property 'remaining_prefill' of 'Sequence' object has no setter)",
    ),
    "the engine's totals": ("view.tally.active += 1", "(the engine's totals, view.tally)"),
}
UNITS = {"unit07": ("fcfs", "mixed"), "unit08": ("paged", "kv-pages")}


@pytest.fixture(scope="module")
def unit_labs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mutations")
    return {u: copy_lab(base / u, solution=True, unit=load_unit(u)) for u in UNITS}


@pytest.mark.parametrize("unit_id", sorted(UNITS))
@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_a_policy_that_changes_its_view_is_stopped(unit_labs, unit_id, kind):
    """The lab's own policy, changed to edit its view first: one sentence naming the function
    and what it changed, no traceback, in both units' labs."""
    lab, (policy, trace) = unit_labs[unit_id], UNITS[unit_id]
    action, named = MUTATIONS[kind]
    policies = lab / "policies.py"
    original = policies.read_text(encoding="utf-8")
    try:
        policies.write_text(
            f"{original}\n\n_reference = {policy}\n\n\ndef {policy}(view, *args, **kwargs):\n"
            f"    if view.waiting:\n        {action}\n"
            f"    return _reference(view, *args, **kwargs)\n",
            encoding="utf-8",
        )
        done = simulate_cli(lab, "--trace", trace, "--policy", policy)
    finally:
        policies.write_text(original, encoding="utf-8")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("simulate.py: error: "), lines
    assert f"{policy}() changed its view {named}" in lines[0], lines
    assert "expected a policy that only reads the view" in lines[0]


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_a_late_change_is_stopped_too(kind):
    """Every call is guarded, not a sample: a change after the 2,500th call stops the run at
    the call that makes it."""
    from servesim import Batch, DeviceProfile, PolicyError, PrefillChunk, parse_trace, simulate

    rows = [  # one request at a time, 50 steps each
        {"id": f"r{i}", "arrivalMs": 100 * i, "inputTokens": 4, "outputTokens": 50}
        for i in range(60)
    ]
    action = MUTATIONS[kind][0]
    calls = []

    def fcfs(view):
        calls.append(view.now_ms)
        if len(calls) >= 2500 and view.waiting:
            exec(action, {"view": view})
        decode = [s.id for s in view.running]
        return Batch(decode, [PrefillChunk(s.id, s.remaining_prefill) for s in view.waiting])

    trace = parse_trace({"requests": rows})
    with pytest.raises(PolicyError) as info:
        simulate(trace, fcfs, DeviceProfile(decode_batch_ms=0.5), name="fcfs")
    assert 2500 <= len(calls) < 2600
    assert str(info.value).startswith(f"fcfs() changed its view {MUTATIONS[kind][1]}")


def test_the_view_lists_refuse_edits_outside_a_call_too():
    from servesim import contract
    from servesim.queues import SeqView

    with pytest.raises(contract.PolicyError, match=r"the policy changed its view \(view.x: "):
        SeqView([1], name="view.x").append(2)


# -- what no refusal can stop: object.__setattr__ on the frozen view, device and batch ----------


def _greedy(view):
    """Every running request decodes, every waiting one prefills whole: over any small B or M."""
    from servesim import Batch, PrefillChunk

    chunks = [PrefillChunk(s.id, s.remaining_prefill) for s in view.waiting]
    return Batch([s.id for s in view.running], chunks)


def _small_trace():
    from servesim import parse_trace

    rows = [{"id": f"r{i}", "arrivalMs": 0, "inputTokens": 40, "outputTokens": 3} for i in range(3)]
    return parse_trace({"requests": rows})


def test_a_budget_set_behind_the_frozen_view_is_not_read():
    """``object.__setattr__(view, "budget", ...)`` writes the policy's copy: the engine checks
    the batch against its own B and stops the run."""
    from servesim import DeviceProfile, PolicyError, simulate

    def cheat(view):
        object.__setattr__(view, "budget", 10**9)
        object.__setattr__(view, "now_ms", -1.0)
        return _greedy(view)

    with pytest.raises(PolicyError, match=r"120 new positions, token budget 50"):
        simulate(_small_trace(), cheat, DeviceProfile(), budget=50, name="cheat")


def test_a_pool_set_behind_the_frozen_device_is_not_read():
    """``object.__setattr__(view.device, "kv_pages", ...)`` writes a copy of the device: the
    engine's pool is unchanged, in this call and in every later one."""
    from servesim import DeviceProfile, PolicyError, simulate

    device = DeviceProfile(kv_pages=4)
    calls = []

    def cheat(view):
        calls.append(view.device.kv_pages)
        object.__setattr__(view.device, "kv_pages", 10**6)
        return _greedy(view)

    with pytest.raises(PolicyError, match=r"needs 9 KV pages, budget 4"):
        simulate(_small_trace(), cheat, device, name="cheat")
    assert device.kv_pages == 4 and calls == [4]


def test_a_previous_batch_rewritten_leaves_the_run_as_it_was():
    """The run's record of a step is the engine's batch: a policy that rewrites
    ``view.previous`` (its ids, a chunk's tokens) with ``object.__setattr__`` changes its own
    copy only, and the timeline is the one the honest policy makes."""
    from servesim import Batch, DeviceProfile, PrefillChunk, simulate

    def fcfs(view):
        head = [s for s in view.waiting][:1]
        chunks = [PrefillChunk(s.id, min(8, s.remaining_prefill)) for s in head]
        return Batch([s.id for s in view.running], chunks)

    def rewriting(view):
        previous = view.previous
        if previous is not None:
            for chunk in previous.prefill:
                object.__setattr__(chunk, "tokens", 10**6)
            object.__setattr__(previous, "decode", ("nobody",))
        return fcfs(view)

    honest = simulate(_small_trace(), fcfs, DeviceProfile(), name="fcfs")
    rewritten = simulate(_small_trace(), rewriting, DeviceProfile(), name="fcfs")
    assert any(e.batch.prefill for e in honest.events[1:])
    assert [e.batch for e in rewritten.events] == [e.batch for e in honest.events]
    assert [s.token_times_ms for s in rewritten.sequences] == [
        s.token_times_ms for s in honest.sequences
    ]


# -- everything a policy reaches, and what each refuses ------------------------------------------


def _reachable(value, path: str, found: dict, seen: set) -> None:
    """Walk what a policy can reach from ``value`` by attributes, items and values; note in
    ``found`` each object that is not immutable by construction, by the path it was reached
    at first: ``refusing`` (edits stop the policy), ``mutable`` (anything else)."""
    import dataclasses
    from enum import Enum
    from types import MappingProxyType

    from servesim.queues import SeqView
    from servesim.sequence import TokenTimes

    if value is None or isinstance(value, (bool, int, float, str, Enum)):
        return
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, (TokenTimes, SeqView, MappingProxyType)):
        found.setdefault("refusing", {})[path] = value
        items = value.values() if isinstance(value, MappingProxyType) else value
        for index, item in enumerate(items):
            _reachable(item, f"{path}[{index}]", found, seen)
        return
    if type(value) is tuple:
        for index, item in enumerate(value):
            _reachable(item, f"{path}[{index}]", found, seen)
        return
    if dataclasses.is_dataclass(value) and type(value).__name__ == "Sequence":
        for field in dataclasses.fields(value):  # its __setattr__ refuses while guarded
            _reachable(getattr(value, field.name), f"{path}.{field.name}", found, seen)
        return
    if dataclasses.is_dataclass(value) and type(value).__dataclass_params__.frozen:
        for field in dataclasses.fields(value):
            _reachable(getattr(value, field.name), f"{path}.{field.name}", found, seen)
        return
    found.setdefault("mutable", {})[path] = type(value).__name__


def _edits(container) -> dict:
    """Each list or dict edit with arguments it would accept: what a policy might call."""
    values = list(container.values()) if hasattr(container, "values") else list(container)
    item = values[0] if values else 0.0
    return {
        "append": (item,), "extend": ([item],), "insert": (0, item), "pop": (0,),
        "remove": (item,), "clear": (), "sort": (), "reverse": (), "__setitem__": (0, item),
        "__delitem__": (0,), "__iadd__": ([item],), "__imul__": (2,), "update": ({0: item},),
        "setdefault": (0, item), "popitem": (),
    }  # fmt: skip


def test_everything_a_policy_reaches_is_read_only_or_compared():
    """During a call of a unit 08 policy with requests waiting, running, swapped out and
    holding pages: what the view holds is immutable (numbers, strings, enums, tuples, frozen
    dataclasses), refuses every list edit while the policy runs (the view's lists, ``live``,
    each sequence's token times; each sequence refuses attribute writes), or is one of the two
    named exceptions: ``view.memo`` (the policy's own dict) and ``view.tally`` (the engine's
    totals, compared after each call). A list or dict added anywhere fails this test."""
    from servesim import Batch, PolicyError, PrefillChunk, simulate

    device = DeviceProfile(kv_pages=64, host_pages=64, max_active=8)
    rows = [{"id": f"r{i}", "arrivalMs": i, "inputTokens": 40, "outputTokens": 6} for i in range(4)]
    seen_views, refused, allowed = [], [], []

    def policy(view):
        if view.swapped and view.waiting and view.running and not seen_views:
            found = {}
            _reachable(view, "view", found, set())
            seen_views.append(found)
            for path, container in found["refusing"].items():
                for name, args in _edits(container).items():
                    try:  # a method it does not have refuses too
                        getattr(container, name)(*args)
                    except (PolicyError, TypeError, AttributeError):
                        refused.append((path, name))
                    else:
                        allowed.append((path, name))
            return Batch()
        decode = [s.id for s in view.running]
        if view.swapped:
            return Batch(decode, swap_in=[view.swapped[0].id])
        if len(view.running) >= 2 and not view.swapped:
            return Batch(decode[1:], swap_out=[decode[0]])
        head = view.waiting[0] if view.waiting else None
        return Batch(decode, [PrefillChunk(head.id, head.remaining_prefill)] if head else [])

    with pytest.raises(PolicyError, match=r"^fcfs\(\) changed its view \("):
        simulate(parse_trace({"requests": rows}), policy, device, name="fcfs")
    (found,) = seen_views
    assert found["mutable"] == {"view.memo": "dict", "view.tally": "Tally"}
    paths = set(found["refusing"])
    assert {"view.waiting", "view.running", "view.swapped", "view.holding", "view.live"} <= paths
    assert any(p.endswith(".token_times_ms") for p in paths), paths
    assert refused and not allowed, allowed


def test_an_admission_hook_that_changes_its_view_is_one_sentence():
    """``policycall.guarded`` guards a call the engine does not (an admission hook): a refused
    edit, a frozen field and a property set behind the guard each end in the one sentence."""
    from servesim import contract
    from servesim.engine import PolicyError
    from servesim.policycall import guarded
    from servesim.sequence import Sequence

    seq = Sequence("a", 0.0, 3, 2, 0)

    def appends(seq, view):
        seq.token_times_ms.append(1.0)
        return True

    def assigns(seq, view):
        view.budget = 1
        return True

    def behind(seq, view):
        object.__setattr__(seq, "generated", 5)
        return True

    view = contract.PrefillChunk("a", 1)  # any frozen dataclass stands for the view here
    expected = {
        appends: "admit() changed its view (token_times_ms of request 'a': .append())",
        assigns: "admit() changed its view (cannot assign to field 'budget')",
        behind: "admit() changed its view (property 'generated' of 'Sequence' object has no",
    }
    for function, message in expected.items():
        function.__name__ = "admit"
        with pytest.raises(PolicyError) as info:
            guarded(function, None, contract.admit_problem)(seq, view)
        assert str(info.value).startswith(message), str(info.value)
    assert seq.token_times_ms == [] and seq.generated == 0


@pytest.mark.parametrize(
    ("action", "named"),
    [
        ("view.device.kv_pages = 1", "cannot assign to field 'kv_pages'"),
        ("view.previous.decode = ()", "cannot assign to field 'decode'"),
        ("view.previous.prefill[0].tokens = 1", "cannot assign to field 'tokens'"),
        ("object.__setattr__(view, 'free_pages', 1)", "property 'free_pages' of 'SchedulerView'"),
    ],
)
def test_the_device_a_batch_a_chunk_and_the_views_properties_refuse(action, named):
    """The frozen device, the previous batch and its chunks refuse an assignment, and a
    property of the view set with ``object.__setattr__`` is refused by Python: each ends in the
    one sentence (the engine's own guard, no ``policycall`` wrapper)."""
    from servesim import Batch, PolicyError, PrefillChunk, simulate

    def fcfs(view):
        if view.previous is not None and view.previous.prefill:
            exec(action, {"view": view})
        head = view.waiting[0] if view.waiting else None
        chunks = [PrefillChunk(head.id, min(8, head.remaining_prefill))] if head else []
        return Batch([s.id for s in view.running], chunks)

    with pytest.raises(PolicyError) as info:
        simulate(_small_trace(), fcfs, DeviceProfile(kv_pages=64), name="fcfs")
    assert str(info.value).startswith(f"fcfs() changed its view ({named}"), str(info.value)
