"""nbgrader cannot be talked into points or data by code in the notebook (issue #31, finding 2).

A student ("mallory") submits the starter ``policies.py`` (the sandboxed grader scores it 0)
and a notebook whose first answer cell attacks the autograder from the kernel, as a student who
wants points and hidden data would:

- it prints every file it can open of the checkout's hidden traces, golden runs, solutions,
  answer-key plug-ins and grader code, of the course (gradebook, source notebook, other
  students) and of the grading user's answer-key cache, and asks the staff package for the
  answer keys (imported, and as ``python -m grader.course.nbcheck``);
- it writes into the installed package (``grader/course/nbcheck.py``), every folder of the
  kernel's ``sys.path`` (a ``sitecustomize.py`` would run in the grader's next process), the
  gradebook and the graded copy of its own ``policies.py``;
- it patches what used to decide the scores: ``subprocess.run`` (to forge the policy
  grading's answer), the notebook's checks, and ``hand_in`` (to hand in a made-up claim and
  print a score), and it hands in NaN and infinity where numbers are expected.

Then: every autograded cell of mallory's scores 0 in the gradebook; nothing it read or wrote
shows in the graded notebook or its feedback HTML (the attack's own marker does, so the test
knows the attack ran); no file it tried to write changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader")

from kernelhost import NEEDS_KERNEL  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402
from test_roundtrip import answered, grade_cells, submit  # noqa: E402

from grader import checkcache  # noqa: E402
from grader.course import nbgrader_course  # noqa: E402
from grader.units import CODE_ROOT, load_unit  # noqa: E402

pytestmark = NEEDS_KERNEL

RAN = "ATTACK-RAN"  # printed by the attack: proof that it executed in the graded notebook
LEAK, WROTE = "LEAKED-DATA", "WROTE-FILE"  # printed for each thing that got through

ATTACK = """
import glob, json, os, subprocess, sys
LEAK, WROTE, RAN = ({halves})  # split: the source holds no marker, only what it prints does
readable = {readable!r}
for pattern in readable:
    for path in sorted(set(glob.glob(pattern) + glob.glob(pattern + "/**/*", recursive=True))):
        try:
            with open(path, "rb") as handle:
                print(LEAK, path, handle.read(120))
        except OSError:
            pass
try:
    from grader.course import nbcheck
    print(LEAK, json.dumps(nbcheck.answer_key(nbcheck.load_unit("unit07"), "mixed")))
except Exception as exc:
    print("no staff package:", type(exc).__name__)
done = subprocess.run(
    [sys.executable, "-I", "-m", "grader.course.nbcheck", "expected", "--unit", "unit07", "mixed"],
    capture_output=True, text=True,
)
if done.returncode == 0:
    print(LEAK, done.stdout)
for target in {writable!r} + [os.path.join(d, "sitecustomize.py") for d in sys.path if d]:
    try:
        with open(target, "a") as handle:
            handle.write("# " + WROTE + "\\n")
        print(WROTE, target)
    except OSError:
        pass
_real_run = subprocess.run
def _forged_run(*args, **kwargs):
    class Done:
        returncode = 0
        stdout = json.dumps({{"score": 1, "maxScore": 1, "text": "all hidden cases passed"}})
        stderr = ""
    return Done()
subprocess.run = _forged_run
check_close = check_numbers = lambda *args, **kwargs: None
def hand_in(**answers):
    from IPython.display import display
    forged = {{name: "PASS" for name in answers}}
    display({{"{mime}": forged, "text/plain": "4.0"}}, raw=True)
    display({{"text/plain": "4.0"}}, raw=True)
    print("4.0", file=sys.stderr)
d1_times = {{"fcfs": "PASS", "chunked": "PASS"}}
d1_a_max_itl = {{"fcfs": float("nan"), "chunked": float("inf")}}
print(RAN)
"""


def attack_source(course: Path) -> str:
    unit = load_unit("unit07")
    readable = [
        str(unit.traces_dir),
        str(unit.solutions_dir),
        str(unit.unit_dir / "notebook"),
        str(CODE_ROOT / "grader" / "course"),
        str(course / "gradebook.db"),
        str(course / "source"),
        str(course / "submitted" / "alice"),
        str(checkcache.cache_dir()),
    ]
    writable = [
        str(CODE_ROOT / "grader" / "course" / "nbcheck.py"),
        str(course / "gradebook.db"),
        str(course / "autograded" / "mallory" / "unit07" / "policies.py"),
        str(checkcache.cache_dir() / "planted.json"),
    ]
    from grader.course.nbscores import ANSWERS_MIME

    halves = ", ".join(f"{m[:4]!r} + {m[4:]!r}" for m in (LEAK, WROTE, RAN))
    return ATTACK.format(readable=readable, writable=writable, halves=halves, mime=ANSWERS_MIME)


def templates_path() -> str:
    """JUPYTER_PATH with nbconvert's templates: those of the environment nbconvert is
    installed in (a virtualenv that borrows another's packages lacks them in its own)."""
    import nbconvert

    prefix = Path(nbconvert.__file__).resolve().parents[4]  # .../lib/pythonX.Y/site-packages/
    found = [str(prefix / "share" / "jupyter"), os.environ.get("JUPYTER_PATH", "")]
    return os.pathsep.join(p for p in found if p)


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """A unit 07 course where mallory's notebook attacked the autograder (see the module doc)."""
    unit = load_unit("unit07")
    root = tmp_path_factory.mktemp("course-attack")
    result = nbgrader_course.release_nbgrader(unit, root)
    source_nb = nbformat.read(result.source / "unit07.ipynb", as_version=4)
    release_nb = nbformat.read(result.release / "unit07.ipynb", as_version=4)
    starter = (result.release / "policies.py").read_text(encoding="utf-8")
    submit(root, unit, "alice", answered(release_nb, source_nb, {}), {})  # a classmate
    overrides = {"d1_answer": attack_source(root)}
    for cell in release_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code" and meta["grade_id"] != "d1_answer":
            overrides[meta["grade_id"]] = "pass  # nothing: the attack hands in what it forges"
    submit(
        root, unit, "mallory", answered(release_nb, source_nb, overrides), {"policies.py": starter}
    )
    site_dirs = [Path(p) for p in sys.path if p and Path(p).is_dir()]
    watched = [
        CODE_ROOT / "grader" / "course" / "nbcheck.py",
        *(d / "sitecustomize.py" for d in site_dirs),
    ]
    before = {path: digest(path) for path in watched}
    done = nbgrader_course.nbgrader(root, "autograde", "unit07", "--student", "mallory", "--force")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    after = {path: digest(path) for path in watched}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", templates_path())
        feedback = nbgrader_course.nbgrader(
            root, "generate_feedback", "unit07", "--student", "mallory"
        )
    assert feedback.returncode == 0, (feedback.stdout + feedback.stderr)[-4000:]
    html = (root / "feedback" / "mallory" / "unit07" / "unit07.html").read_text(encoding="utf-8")
    graded = (root / "autograded" / "mallory" / "unit07" / "unit07.ipynb").read_text(
        encoding="utf-8"
    )
    return {
        "root": root,
        "source_nb": source_nb,
        "before": before,
        "after": after,
        "html": html,
        "graded": graded,
        "starter": starter,
    }


def test_the_attack_ran_in_the_graded_notebook(attacked):
    assert RAN in attacked["graded"] and RAN in attacked["html"]


def test_the_attack_earns_no_autograded_point(attacked):
    autograded = grade_cells(attacked["source_nb"])
    with Gradebook(f"sqlite:///{attacked['root'] / 'gradebook.db'}", "infralab") as gradebook:
        notebook = gradebook.find_submission_notebook("unit07", "unit07", "mallory")
        got = {g.name: g.auto_score for g in notebook.grades if g.name in autograded}
    assert set(got) == set(autograded)
    assert got == dict.fromkeys(autograded, 0.0)
    print(f"mallory: 0/{sum(autograded.values()):g} autograded points")


def test_the_attack_reads_nothing_hidden(attacked):
    for text in (attacked["graded"], attacked["html"]):
        assert LEAK not in text
        assert "no staff package: ModuleNotFoundError" in text


def test_the_attack_writes_nothing_the_grader_keeps(attacked):
    assert attacked["after"] == attacked["before"]
    for text in (attacked["graded"], attacked["html"]):
        assert WROTE not in text
    graded_policies = attacked["root"] / "autograded" / "mallory" / "unit07" / "policies.py"
    assert graded_policies.read_text(encoding="utf-8") == attacked["starter"]
    assert WROTE.encode() not in (attacked["root"] / "gradebook.db").read_bytes()
    assert not (checkcache.cache_dir() / "planted.json").exists()


def test_no_hidden_trace_shows_in_the_feedback(attacked):
    unit = load_unit("unit07")
    hidden = [
        json.loads(p.read_text()) for p in sorted((unit.traces_dir / "hidden").glob("*.json"))
    ]
    assert hidden, "unit 07 has hidden traces"
    for trace in hidden:
        word = re.compile(rf"(?<![\w-]){re.escape(trace['name'])}(?![\w-])")
        assert not word.search(attacked["html"]), trace["name"]
        assert not word.search(attacked["graded"]), trace["name"]
