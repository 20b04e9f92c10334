"""Chapter 31's exercises 31.1-31.13: each is reachable from some unit's lab (``exercises.py``
lists what its lab has, a command or a notebook section), each command runs in the lab folder
with ``python3`` alone and prints the book's numbers, and the exercise code imports only the
standard library, the engine (``servesim``, where the rules live) and its own lab's files."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from labtools import copy_lab

from grader.units import load_unit

UNITS = ("unit07", "unit08", "unit09")
CHAPTER = {f"31.{n}" for n in range(1, 14)}
_LINE = re.compile(r"^  (\S+)\s+(.*?)  \[(exercises\.py \S+|notebook: .*)\]$")


@pytest.fixture(scope="module")
def labs(tmp_path_factory) -> dict[str, Path]:
    """Each unit's lab folder as students get it, with the reference's editable files (the
    exercises that run the student's code run the reference's)."""
    root = tmp_path_factory.mktemp("ch31")
    return {u: copy_lab(root / u, True, load_unit(u)) for u in UNITS}


def lab_run(lab: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-I", "exercises.py", *args], cwd=lab, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def listed(lab: Path) -> dict[str, str]:
    """``python3 exercises.py``: number -> where (a command or a notebook section)."""
    done = lab_run(lab)
    assert done.returncode == 0, done.stderr
    rows = [_LINE.match(line) for line in done.stdout.splitlines()[1:]]
    assert all(rows), done.stdout
    return {m.group(1): m.group(3) for m in rows}


def numbers(lab: Path, *args: str) -> dict:
    done = lab_run(lab, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_exercise_of_the_chapter_is_listed_by_some_lab(labs):
    found: dict[str, list[str]] = {}
    for unit, lab in labs.items():
        for number in listed(lab):
            found.setdefault(number, []).append(unit)
    assert set(found) >= CHAPTER, f"not reachable: {sorted(CHAPTER - set(found))}"
    assert all(len(units) == 1 for n, units in found.items() if n in CHAPTER), found


def test_notebook_entries_name_a_section_the_units_notebook_has(labs):
    for unit, lab in labs.items():
        for number, where in listed(lab).items():
            if not where.startswith("notebook: "):
                continue
            notebook = load_unit(unit).unit_dir / "notebook" / f"{unit}.ipynb"
            assert where.split(": ", 1)[1].startswith(notebook.name)
            cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
            assert any(f"## 习题 {number}" in "".join(c["source"]) for c in cells), number
            shown = lab_run(lab, number)
            assert shown.returncode == 0 and notebook.name in shown.stdout


def test_31_1_ttft_tpot_and_the_first_wait(labs):
    r = numbers(labs["unit07"], "31.1")
    even, stall = r["timelines"]["even"], r["timelines"]["one stall"]
    assert (r["firstWaitS"], even["ttftS"]) == pytest.approx((0.1, 0.3))
    assert even["tpotS"] == pytest.approx(0.02) and stall["tpotS"] == pytest.approx(0.02)
    assert r["ttftPlusGapsS"] == pytest.approx(0.9) == even["e2eS"]
    assert stall["maxItlS"] > 25 * even["maxItlS"]  # what the two timelines differ in


def test_31_2_figure_and_exercise_completions_and_buckets(labs):
    r = numbers(labs["unit08"], "31.2")
    figure, exercise = r["rounds"]["figure 31.1"], r["rounds"]["exercise 31.2"]
    assert figure["static"] == {"finishMs": {"A": 40, "B": 10, "C": 50}, "mean": [100, 3]}
    assert figure["continuous"] == {"finishMs": {"A": 40, "B": 10, "C": 20}, "mean": [70, 3]}
    assert exercise["static"] == {"finishMs": {"A": 28, "B": 10, "C": 34}, "mean": [24, 1]}
    assert exercise["continuous"] == {"finishMs": {"A": 32, "B": 10, "C": 20}, "mean": [62, 3]}
    none, window, alone = r["buckets"].values()
    assert none["groups"][0] == [0, ["A", "B"]]
    assert window["groups"][:2] == [[5, ["A", "C"]], [50, ["B"]]]  # C fills A's bucket
    assert alone["groups"][0] == [50, ["A"]] and alone["ttftMs"]["A"] == 50  # waited it out


def test_31_2_with_stub_policies_is_one_line_not_a_traceback(tmp_path):
    done = lab_run(copy_lab(tmp_path / "lab", False, load_unit("unit08")), "31.2")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "static() in policies.py is not implemented" in (
        done.stderr
    )


def test_31_5_page_count(labs):
    r = numbers(labs["unit08"], "31.5")
    assert (r["pagesBefore"], r["pagesAfter"]) == ([17, 16], [17, 17])
    assert (r["totalBefore"], r["totalAfter"], r["addedKiB"]) == (33, 34, 1024)


def test_31_6_littles_law_on_the_step_function(labs):
    r = numbers(labs["unit08"], "31.6")
    assert [n for _, _, n in r["steps"]] == [1, 2, 1]
    assert (r["area"], r["meanInSystem"], r["completionRate"], r["meanResidence"]) == (
        "4", "4/3", "2/3", "2",
    )  # fmt: skip
    assert r["littleHolds"]
    clipped = numbers(labs["unit08"], "31.6", "--intervals", "-1", "2", "1", "4")
    assert clipped["area"] == clipped["clippedResidences"] == "4"  # the overlaps, 2 + 2
    assert clipped["meanResidence"] is None and not clipped["littleHolds"]


def test_31_7_mm1_formulas_and_the_engine_queue(labs):
    r = numbers(labs["unit08"], "31.7", "--requests", "3000", "--seeds", "2")
    low, high = r["rates"]
    assert (low["meanFormulaMs"], high["meanFormulaMs"]) == pytest.approx((50, 200))
    assert (low["p99FormulaMs"], high["p99FormulaMs"]) == pytest.approx((230.26, 921.03), 1e-4)
    assert len(low["meanMs"]) == 2 and min(high["meanMs"]) > max(low["meanMs"]) > 0


def test_31_8_the_union_bound(labs):
    r = numbers(labs["unit09"], "31.8")
    assert (r["p99X"], r["p99Y"], r["sumOfP99s"], r["p99Total"]) == (100, 200, 300, 350)
    assert r["shareOverSum"] == pytest.approx(0.02) == r["unionBound"]
    assert r["sumOfP995s"] == 400 and r["shareOverP995Sum"] <= 0.01


def test_31_9_fairness_per_request_and_per_token(labs):
    r = numbers(labs["unit08"], "31.9")
    assert r["perRequestTokenShareB"] == [100, 101] and r["perTokenRequestRatio"] == [1000, 10]


@pytest.mark.parametrize(
    ("unit", "number", "shown"),
    [
        ("unit08", "31.3", "= 1/2"),
        ("unit08", "31.4", "98688"),
        ("unit08", "swap", "crossover"),
        ("unit09", "31.10", "64 / (12 - 4) = 8 s"),
        ("unit09", "31.11", "all invariants hold"),
        ("unit09", "31.13", "diagnosis: overload"),
    ],
)
def test_the_other_commands_run_and_print_the_books_figure(labs, unit, number, shown):
    done = lab_run(labs[unit], number)
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout


def _exercise_modules(unit: str) -> list[Path]:
    lab = load_unit(unit).lab_dir
    return [lab / "exercises.py", *sorted(lab.glob("ex31_*.py")), *sorted(lab.glob("worked.py"))]


@pytest.mark.parametrize("unit", UNITS)
def test_exercise_code_imports_the_standard_library_the_engine_and_its_lab_only(unit):
    lab = load_unit(unit).lab_dir
    own = {p.stem for p in lab.glob("*.py")}
    for path in _exercise_modules(unit):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "servesim" or top in own, (
                    f"{path.name} imports {name}"
                )
