"""The run-file validator's shortcut (``grader.verify.runschema``) finds exactly the errors the
plain Draft 2020-12 validator finds: on real run files (full and compact, unit 07 and 08, with
rejected requests) and on copies with one value, field or item changed."""

from __future__ import annotations

import copy
import random

import pytest
from jsonschema import Draft202012Validator
from refruns import KV_PAGES, run_file

from grader.units import load_unit
from grader.verify import runschema

U07, U08 = load_unit("unit07"), load_unit("unit08")
# what a changed leaf becomes: every JSON kind, bounds' edges, and values JSON cannot hold
LEAVES = [-1, 0, 1, 2.5, -0.0, 1e308, "", "x", "completed", None, True, False, [], {}, [1, 2]]
LEAVES += [float("nan"), float("inf"), 3.0]


def errors(validator, document) -> list[tuple]:
    return [
        (e.message, tuple(e.absolute_path), e.validator) for e in validator.iter_errors(document)
    ]


def places(node, path=()):
    """Every path in the document, with whether it holds a list, a dict or a leaf."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from places(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from places(value, (*path, index))


def changed(document, rng: random.Random):
    """A copy of ``document`` with one thing changed: a value replaced, a field removed or
    added, an item removed or repeated."""
    doc = copy.deepcopy(document)
    path, node = rng.choice(list(places(doc)))
    if not path:
        return rng.choice(LEAVES)
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    how = rng.randrange(4)
    if how == 0 or not isinstance(node, (dict, list)):
        parent[last] = rng.choice(LEAVES)
    elif isinstance(node, dict) and how == 1 and node:
        del node[rng.choice(list(node))]
    elif isinstance(node, dict):
        node[rng.choice(["extra", "id", "status", "tokens"])] = rng.choice(LEAVES)
    elif how == 1 and node:
        node.pop(rng.randrange(len(node)))
    elif node:
        node.append(copy.deepcopy(rng.choice(node)))
    return doc


CHANGES = 60


@pytest.mark.parametrize(
    ("unit", "argv", "fmt"),
    [
        (U07, ("--trace", "mixed", "--policy", "both"), "full"),
        (U07, ("--trace", "mixed", "--policy", "both"), "compact"),
        (U08, KV_PAGES, "full"),
        (U08, KV_PAGES, "compact"),
    ],
    ids=["unit07-full", "unit07-compact", "unit08-full", "unit08-compact"],
)
def test_the_shortcut_finds_the_plain_validators_errors(tmp_path, unit, argv, fmt):
    argv = [str(unit.lab_dir / a) if a.startswith("devices/") else a for a in argv]
    document = run_file(unit, tmp_path, fmt, *argv)
    fast = runschema._validator(str(unit.lab_dir / "schemas"))
    plain = Draft202012Validator(fast.schema)
    assert errors(fast, document) == errors(plain, document) == []
    assert runschema._passes(fast.schema, document)  # a valid file skips the validator
    rng = random.Random(f"{unit.id}-{fmt}-{argv[1]}")
    failing = 0
    for _ in range(CHANGES):
        doc = changed(document, rng)
        want = errors(plain, doc)
        assert errors(fast, doc) == want
        if runschema._passes(fast.schema, doc):  # the whole-file shortcut is never wrong
            assert want == []
        failing += bool(want)
    assert failing > CHANGES // 5  # most changes break the file: the comparison covers errors
