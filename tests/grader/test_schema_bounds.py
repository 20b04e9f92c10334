"""Every field of a run file has a bound that comes from its schema (issue 46, item 2).

The lab schemas bound every array, string and open object (``grader/verify/bounds.py`` says
how); one walk of the schema checks them before the schema validation, the expansion of a
compact entry and the replay. A run file padded in any field is refused there with one
sentence naming the field, and no feedback quotes the count the file holds.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
import time

import pytest
from refruns import KV_PAGES, run_file
from servesim import compact

from grader.cases import Kind, case_trace_doc, load_grading
from grader.course.golden import load_golden
from grader.grading.hidden import Note
from grader.grading.judge import judge
from grader.grading.report import Status
from grader.sandbox import ChildResult
from grader.units import load_unit, unit_ids
from grader.verify import bounds
from grader.verify.normalise import oversize
from grader.verify.runschema import inlined_schema

UNITS = tuple(unit_ids())  # every unit of the course: a new one inherits these tests
SCHEMAS = ("run.schema.json", "trace.schema.json")
judge_module = importlib.import_module("grader.grading.judge")  # the package exports judge()
FREE_STRING = {"type", "minLength", "description"}


def unbounded(node, where: str = "") -> list[str]:
    """Every place in a raw schema where an array, string or open object has no bound."""
    if isinstance(node, list):
        return [p for n, sub in enumerate(node) for p in unbounded(sub, f"{where}/{n}")]
    if not isinstance(node, dict):
        return []
    found = []
    kinds = node.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if ("array" in kinds or "prefixItems" in node) and not node.keys() & {"maxItems", "x-maxItems"}:
        found.append(f"{where} (array)")
    if "string" in kinds and not node.keys() & {"maxLength", "enum", "const"}:
        found.append(f"{where} (string)")
    open_object = "object" in kinds and node.get("additionalProperties") is not False
    if open_object and "x-maxUndescribed" not in node:
        found.append(f"{where} (open object)")
    if not kinds and not node.keys() & {"$ref", "enum", "const", "if", "properties", "$defs"}:
        found.append(f"{where} (any value)")
    for quantity in (node.get("x-maxItems"), node.get("x-maxSum")):
        if quantity is not None and quantity not in bounds.QUANTITIES:
            found.append(f"{where} (unknown quantity {quantity!r})")
    for key, sub in node.items():
        if key == "if":  # a condition on the value, not a value
            continue
        if key in ("properties", "$defs"):
            found += [p for name, s in sub.items() for p in unbounded(s, f"{where}/{name}")]
        elif isinstance(sub, (dict, list)) and key != "required":
            found += unbounded(sub, f"{where}/{key}")
    return found


@pytest.mark.parametrize("unit_id", UNITS)
@pytest.mark.parametrize("name", SCHEMAS)
def test_every_array_string_and_open_object_of_the_run_schemas_is_bounded(unit_id, name):
    path = load_unit(unit_id).lab_dir / "schemas" / name
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert unbounded(schema) == []


def test_the_schema_walk_finds_what_is_unbounded():
    """The walk above fails on a schema with an unbounded array, string or open object."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "string"}}, "b": {}},
        "$defs": {"o": {"type": "object"}, "q": {"type": "array", "x-maxItems": "tokens"}},
    }
    assert sorted(unbounded(schema)) == [
        " (open object)",
        "/a (array)",
        "/a/items (string)",
        "/b (any value)",
        "/o (open object)",
        "/q (unknown quantity 'tokens')",
    ]


def test_every_reference_run_is_within_its_bounds():
    """No graded case's reference run (its golden run file) passes a bound."""
    checked = 0
    for unit_id in UNITS:
        unit = load_unit(unit_id)
        for case in load_grading(unit).cases:
            if case.kind is Kind.SCRIPT:
                continue
            trace_doc = case_trace_doc(unit, case)
            run = load_golden(unit, case)["run"]
            document = {"formatVersion": 1, "trace": trace_doc, "runs": [run]}
            assert oversize(unit, document, trace_doc) is None, (unit_id, case.id)
            checked += 1
    assert checked > 60


# -- padding each field in turn --------------------------------------------------------------


# one policy per file (a file of several runs is refused before the bounds), every format;
# unit 09's devices cache prefixes, which only the full format writes, so its compact entry is
# unit 08's (the two units share the run schema)
RUNS = {
    "unit07": [("unit07", ("--trace", "mixed", "--policy", "chunked", "--chunk", "2"), "full"),
               ("unit07", ("--trace", "mixed", "--policy", "fcfs"), "compact")],
    "unit08": [("unit08", KV_PAGES, "full"), ("unit08", KV_PAGES, "compact")],
    "unit09": [("unit09", ("--trace", "slow-readers", "--policy", "backpressure",
                           "--device-profile", "devices/streaming.json"), "full"),
               ("unit09", ("--trace", "shared-prefix", "--policy", "prefix_paged"), "full"),
               ("unit08", KV_PAGES, "compact")],
}  # fmt: skip


def places(node, value, path: str, out: dict) -> dict:
    """Every bounded place of the schema the document reaches, by the path the bounds name it:
    ``path -> (schema node, container, key)``, where ``container[key]`` is its first value (a
    field the first object that may hold it lacks is added there); ``key`` None: an open
    object's undescribed members."""
    if not isinstance(node, dict):
        return out
    node = bounds._branch(node, value)
    if isinstance(value, dict):
        if "x-maxUndescribed" in node:
            out.setdefault(f"{path or 'top level'}+", (node, value, None))
        for name, sub in node.get("properties", {}).items():
            where = f"{path}.{name}" if path else name
            out.setdefault(where, (sub, value, name))
            if name in value:
                places(sub, value[name], where, out)
    elif isinstance(value, list):
        prefix, rest = node.get("prefixItems", []), node.get("items")
        for n, item in enumerate(value):
            sub = prefix[n] if n < len(prefix) else rest
            if sub is None:
                break
            where = f"{path}[{n}]" if n < len(prefix) else f"{path}[]"
            out.setdefault(where, (sub, value, n))
            places(sub, item, where, out)
    return out


def padded(node: dict, current, trace_doc: dict):
    """A value one past the bound of ``node``, and that count (None: the place has no bound
    of a size, e.g. a number)."""
    trace = bounds.TraceBounds.of(trace_doc)
    if "x-maxItems" in node or "maxItems" in node:
        most = min(
            trace.quantity(node["x-maxItems"]) if "x-maxItems" in node else 10**9,
            node.get("maxItems", 10**9),
        )
        sample = current[0] if isinstance(current, list) and current else 0
        return [sample] * (most + 1), most + 1
    if "x-maxSum" in node:
        most = trace.quantity(node["x-maxSum"])
        return most + 1, most + 1
    if "maxLength" in node:
        return "x" * (node["maxLength"] + 1), node["maxLength"] + 1
    if "enum" in node and any(isinstance(v, str) for v in node["enum"]):
        longest = max(len(v) for v in node["enum"] if isinstance(v, str))
        return "x" * (longest + 1), longest + 1
    return None, None


def child_with(document) -> ChildResult:
    return ChildResult(0, "", "", False, json.dumps(document).encode(), "test")


def never(*args, **kwargs):
    raise AssertionError("the run file got past the bounds")


class Walks:
    """Counts the values the bound walk visits (the work it does, not the time it takes)."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = bounds._Walk.value

        def counted(walk, node, value, path):
            self.count += 1
            return real(walk, node, value, path)

        monkeypatch.setattr(bounds._Walk, "value", counted)

    def of(self, action) -> int:
        self.count = 0
        action()
        return self.count


@pytest.mark.parametrize("unit_id", UNITS)
def test_a_run_file_padded_in_any_field_is_refused_before_the_replay(
    unit_id, tmp_path, monkeypatch
):
    unit = load_unit(unit_id)
    case = next(c for c in load_grading(unit).cases if c.kind is not Kind.SCRIPT)
    schema = inlined_schema(unit)
    for stage in ("validate_run_file", "normalise_run"):
        monkeypatch.setattr(judge_module, stage, never)
    monkeypatch.setattr(compact, "expand_run", never)
    monkeypatch.setattr(judge_module.verify, "replay_run", never)
    walks = Walks(monkeypatch)
    padded_paths, slowest = set(), 0.0
    assert unit_id in RUNS, f"name the run files of {unit_id} to pad in RUNS"
    for lab, argv, fmt in RUNS[unit_id]:
        document = run_file(load_unit(lab), tmp_path, fmt, *argv)
        assert document["runs"][0].get("format", "full") == fmt
        if fmt == "compact":  # one resume (as a swap-in would make), so its count is padded too
            document["runs"][0].setdefault("resumes", [list(document["runs"][0]["slices"][0])])
        trace_doc = document["trace"]
        assert oversize(unit, document, trace_doc) is None
        plain = walks.of(lambda d=document, t=trace_doc: oversize(unit, d, t))
        for path in sorted(places(schema, document, "", {})):
            if path.startswith("trace"):
                continue  # the case's own trace: the file's must equal it, checked first
            doc = copy.deepcopy(document)
            node, container, key = places(schema, doc, "", {})[path]
            if key is None:
                value, count = "x" * (node["x-maxUndescribed"] + 1), node["x-maxUndescribed"] + 1
                container["padding"] = value
            else:
                held = isinstance(container, list) or key in container
                value, count = padded(node, container[key] if held else None, trace_doc)
                if value is None:
                    continue
                container[key] = value
            verdict = judge(unit, case, trace_doc, {}, child_with(doc))
            assert verdict.status is Status.INVALID_SCHEDULE, (path, verdict)
            texts = [verdict.visible_text(), verdict.hidden_text()]
            for text in texts:  # one sentence each, and never the count the file holds
                assert str(count) not in re.findall(r"\d+", text), (path, text)
            if path == "runs":
                continue  # refused by its own check first: exactly one run
            assert verdict.note is Note.OVERSIZE, (path, verdict)
            named = path.removesuffix("+")
            assert named in verdict.summary and "\n" not in verdict.summary, (path, verdict)
            started = time.perf_counter()
            work = walks.of(lambda d=doc, t=trace_doc: oversize(unit, d, t))
            slowest = max(slowest, time.perf_counter() - started)  # reported, never asserted
            assert work <= plain + 1, (path, work, plain)  # the padding itself is never walked
            padded_paths.add(path)
    relative = {p for p, _ in schema_places(schema) if not p.startswith(("trace", "runs+"))}
    assert relative <= padded_paths, relative - padded_paths
    print(f"{unit_id}: {len(padded_paths)} fields padded, slowest check {slowest * 1e3:.2f} ms")


def schema_places(node, path: str = ""):
    """Every place of the schema with an ``x-maxItems`` or ``x-maxSum`` bound, by its path."""
    if not isinstance(node, dict):
        return
    if "x-maxItems" in node or "x-maxSum" in node:
        yield path, node
    for branch in ("then", "else"):
        if branch in node:
            yield from schema_places(node[branch], path)
    for name, sub in node.get("properties", {}).items():
        yield from schema_places(sub, f"{path}.{name}" if path else name)
    for n, sub in enumerate(node.get("prefixItems", [])):
        yield from schema_places(sub, f"{path}[{n}]")
    if isinstance(node.get("items"), dict):
        yield from schema_places(node["items"], f"{path}[]")


def test_a_pause_list_within_its_bound_is_not_quoted(tmp_path):
    """Extra pauses below the bound reach the replay, whose finding names the real pauses only."""
    unit = load_unit("unit09")
    case = load_grading(unit).by_id("backpressure-slow-readers")
    trace_doc = case_trace_doc(unit, case)
    document = {"formatVersion": 1, "trace": trace_doc, "runs": [load_golden(unit, case)["run"]]}
    request = next(r for r in document["runs"][0]["requests"] if r.get("pausedMs"))
    request["pausedMs"] += [[1.0, 2.0]] * 37
    listed = len(request["pausedMs"])
    verdict = judge(unit, case, trace_doc, load_golden(unit, case), child_with(document))
    assert verdict.status is Status.INVALID_SCHEDULE
    assert "pausedMs" in verdict.visible_text()
    for text in (verdict.visible_text(), verdict.hidden_text()):
        assert str(listed) not in re.findall(r"\d+", text), text
