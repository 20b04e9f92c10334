"""Issue 31, finding 1, as an attack in the real sandbox: in both units, a submission raises
``AttributeError: module 'policies' has no attribute '<name>'`` on every hidden case, the name
spelling out the hidden trace (its name, size and first prompt). The grader used to quote the
name in the verdict ("policies.py defines no function <name>()"). Now every student view of
every hidden case must be byte-identical to a submission raising a constant name, and none of
the names may show; public cases still name the missing function.
"""

from __future__ import annotations

import json

from grader.cases import load_grading
from grader.grading.grade import Status, grade_submission
from grader.grading.submission import Submission
from grader.units import load_unit

PROLOGUE = '''
import json as _json
import re as _re
import sys as _sys
from pathlib import Path as _Path


def _secret():
    """The hidden trace as an identifier; None on a public trace."""
    flag = "--trace" if "--trace" in _sys.argv else "--input"
    if flag not in _sys.argv:
        return None
    doc = _json.loads(_Path(_sys.argv[_sys.argv.index(flag) + 1]).read_text())
    here = _Path(__file__).resolve().parent / "traces"
    if doc in [_json.loads(p.read_text()) for p in here.glob("*.json")]:
        return None
    if CONSTANT:
        return "t_constant_name"
    trace = doc.get("run", doc)
    requests = trace.get("requests", [])
    name = _re.sub(r"\\W", "_", str(doc.get("name", "check")))
    first = requests[0].get("inputTokens", 0) if requests else 0
    return f"t_{name}_{len(requests)}_{first}"[:64]


_NAME = _secret()
if _NAME:
    raise AttributeError(f"module 'policies' has no attribute '{_NAME}'")
'''

UNIT08_CASES = [
    "paged-unseen",
    "fair-tenants",
    "static-steady-k4",
    "budgeted-kv-b512-m96-k8",
    "paged-ties-b128-m32-k8",
    "fair-tenants-b256-q64",
    "timed-ties-t21-s8-k6",
    "measure-tpot-steady",
    "measure-goodput-deadlines",
    "challenge-deadlines",
]


def attack(unit, constant: bool) -> Submission:
    files = {name: (unit.solutions_dir / name).read_bytes() for name in unit.editable}
    head = f"CONSTANT = {constant}\n{PROLOGUE}\n".encode()
    future = b"from __future__ import annotations\n"
    for name, source in files.items():
        before, found, after = source.partition(future)
        files[name] = before + found + head + after if found else head + source
    return Submission(files, source="attribute channel")


def hidden_views(report) -> list:
    """Every student view of the hidden cases."""
    student = report.to_json()
    gradescope = report.to_gradescope()
    return [
        [(c.label, c.status, c.points, c.feedback) for c in report.cases if c.hidden],
        [c for c in student["cases"] if c["visibility"] == "hidden"],
        [t for t in gradescope["tests"] if t["visibility"] != "visible"],
        gradescope.get("leaderboard"),
    ]


def secrets(unit) -> list[str]:
    """Every name the attack can spell out of this unit's hidden traces (and fragments)."""
    names = []
    for path in sorted((unit.traces_dir / "hidden").glob("*.json")):
        doc = json.loads(path.read_text())
        names += [doc["name"], doc["name"].replace("-", "_")]
    return names


def test_an_attribute_name_carries_nothing_out_of_a_hidden_case_unit07(mode):
    check(load_unit("unit07"), None)


def test_an_attribute_name_carries_nothing_out_of_a_hidden_case_unit08(mode08):
    check(load_unit("unit08"), UNIT08_CASES)


def check(unit, cases: list[str] | None) -> None:
    leaking = grade_submission(unit, attack(unit, constant=False), cases=cases)
    constant = grade_submission(unit, attack(unit, constant=True), cases=cases)
    hidden = [c for c in leaking.cases if c.hidden]
    assert len(hidden) >= 8
    assert all(c.status is Status.NOT_IMPLEMENTED for c in hidden), leaking.text(staff=True)
    # the attack did spell the traces out: the staff detail holds the names ...
    assert any("t_" in c.staff_detail and "t_constant" not in c.staff_detail for c in hidden)
    # ... and no student view of a hidden case does
    assert hidden_views(leaking) == hidden_views(constant)
    shown = "\n".join([leaking.text(), json.dumps(leaking.to_json())])
    shown += json.dumps(leaking.to_gradescope())
    assert not [s for s in secrets(unit) if f"t_{s}" in shown]
    # public cases still show the student their own error
    public = [c for c in leaking.cases if not c.hidden]
    assert public and all(c.status is Status.PASSED for c in public)
    assert len(load_grading(unit).cases) >= len(leaking.cases)
