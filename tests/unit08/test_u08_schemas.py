"""The unit 08 JSON Schemas accept what the lab writes and reads, and refuse what it refuses."""

import json

import jsonschema
import pytest
from u08tools import UNIT08, device, run08

from grader import reference
from grader.runschema import validate_run_file

SCHEMAS = UNIT08.lab_dir / "schemas"


def schema(name):
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("trace", "policy", "profile"),
    [
        ("burst", "paged", "pool-256"),
        ("kv-pages", "budgeted", "kv-64-pages"),
        ("static-vs-continuous", "static", "round-10ms"),
    ],
)
def test_reference_run_files_are_valid(trace, policy, profile):
    from servesim.runfile import build_document

    parsed = reference.load_trace(UNIT08, trace)
    params = {"budget": 512} if policy != "static" else {}
    run = run08(parsed, policy, device(profile), **params)
    document = json.loads(json.dumps(build_document(parsed, [run])))
    assert validate_run_file(UNIT08, document) is None


def test_a_run_without_status_is_refused():
    from servesim.runfile import build_document

    parsed = reference.load_trace(UNIT08, "kv-pages")
    run = run08(parsed, "paged", device("kv-64-pages"), budget=512)
    del run["requests"][0]["status"]
    error = validate_run_file(UNIT08, json.loads(json.dumps(build_document(parsed, [run]))))
    assert error is not None and "runs/requests" in error


def test_public_traces_and_tiers_are_valid():
    trace_schema, tier_schema = schema("trace"), schema("tier")
    for path in sorted((UNIT08.lab_dir / "traces").glob("*.json")):
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), trace_schema)
    for path in sorted((UNIT08.lab_dir / "tiers").glob("*.json")):
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), tier_schema)


def test_tier_schema_refuses_an_unknown_field():
    doc = json.loads((UNIT08.lab_dir / "tiers" / "small-paged.json").read_text(encoding="utf-8"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "colour": "red"}, schema("tier"))
