"""unit.yaml and trace specs are checked by JSON Schemas; each error is one line naming a field."""

from __future__ import annotations

import json

import pytest
import yaml

from grader.cases import load_grading
from grader.cli import main
from grader.schema import SCHEMA_DIR, SchemaError, validate
from grader.units import CODE_ROOT, UnitError, load_unit


def write_unit(tmp_path, unit, change) -> str:
    doc = json.loads(json.dumps(unit.doc))
    change(doc)
    folder = tmp_path / "labs" / unit.id
    folder.mkdir(parents=True)
    (folder / "unit.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(tmp_path / "labs")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda d: d.pop("device"), "missing field(s) device"),
        (lambda d: [d.pop("device"), d.pop("policies")], "missing field(s) device, policies"),
        (lambda d: d.update(colour="red"), "unknown field 'colour' (known: "),
        (lambda d: d.update(devise={}), "unknown field 'devise' (did you mean 'device'?)"),
        (lambda d: d.update(editable=[]), "field 'editable' must be a list of names"),
        (lambda d: d.update(policies=[{"name": "x"}]), "policies #1: field 'function' is missing"),
        (lambda d: d.update(notebook={"keys": "k.py"}), "notebook: unknown field 'keys'"),
    ],
)
def test_bad_unit_yaml_is_one_line(tmp_path, unit, change, needle):
    labs = write_unit(tmp_path, unit, change)
    with pytest.raises(UnitError) as info:
        load_unit(unit.id, labs)
    assert needle in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "labs" / unit.id / "unit.yaml"))


def test_unit_yaml_that_is_not_a_mapping(tmp_path, unit):
    (tmp_path / unit.id).mkdir()
    (tmp_path / unit.id / "unit.yaml").write_text("- a list\n", encoding="utf-8")
    with pytest.raises(UnitError, match=r"unit\.yaml: must be a mapping$"):
        load_unit(unit.id, tmp_path)


@pytest.mark.parametrize("name", ["unit", "case", "tracespec"])
def test_schemas_are_valid_draft_2020_12(name):
    import jsonschema

    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"].endswith("2020-12/schema")


def test_nearest_error_to_the_top_wins():
    spec = {"name": "", "generate": {"count": 0}}
    with pytest.raises(SchemaError) as info:
        validate(spec, "tracespec", "s.yaml")
    assert str(info.value) == "s.yaml: field 'name' must be a non-empty string"


def test_root_without_labs_is_one_error(tmp_path, capsys):
    assert main(["--root", str(tmp_path), "units"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"infralab: error: --root {tmp_path}: no labs/ folder there"


def test_units_lists_the_repository_units(capsys):
    assert main(["units"]) == 0
    lines = capsys.readouterr().out.splitlines()
    on_disk = sorted(p.parent.name for p in (CODE_ROOT / "labs").glob("*/unit.yaml"))
    assert [line.split()[0] for line in lines] == on_disk
    cases = load_grading(load_unit("unit07")).cases
    hidden = sum(case.hidden for case in cases)
    assert f"cases {len(cases)} ({hidden} hidden)" in lines[on_disk.index("unit07")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "'ratePerMs' must be a number > 0"),
        (float("inf"), "'ratePerMs' must be a number > 0"),
        (True, "'ratePerMs' must be a number > 0"),
    ],
)
def test_numbers_are_finite_and_not_booleans(value, message):
    spec = {
        "name": "x",
        "generate": {
            "seed": 1,
            "count": 2,
            "arrivals": {"process": "poisson", "ratePerMs": value},
            "inputTokens": {"dist": "constant", "value": 1},
            "outputTokens": {"dist": "constant", "value": 1},
        },
    }
    with pytest.raises(SchemaError) as info:
        validate(spec, "tracespec", "s.yaml")
    assert str(info.value) == f"s.yaml: generate.arrivals: {message}"


def test_whole_floats_are_not_integers():
    lengths = {"dist": "constant", "value": 1}
    generate = {"seed": 1, "count": 2.0, "arrivals": {"process": "fixed", "intervalMs": 1}}
    spec = {"name": "x", "generate": {**generate, "inputTokens": lengths, "outputTokens": lengths}}
    with pytest.raises(SchemaError, match=r"generate: 'count' must be an integer >= 1$"):
        validate(spec, "tracespec", "s.yaml")
