"""``infralab release nbgrader``: create or update an nbgrader course directory for a unit.

Layout written under the course directory (everything else is nbgrader's own):

    nbgrader_config.py              created once; the TA's file. It loads the managed file below.
    infralab_nbgrader_config.py     rewritten on every run: course root and id, grading kernel,
                                    Autograde.exclude_overwriting (the units' editable files)
    .infralab/jupyter/kernels/infralab/kernel.json
                                    the grading kernel (``nbkernel``: the sandboxed kernel,
                                    started by the Python running this command)
    source/<unit>/                  the lab folder as shipped to students plus the unit's
                                    notebook(s) from ``labs/<unit>/notebook/``; replaced whole

Then ``nbgrader generate_assignment <unit> --force`` runs in the course directory, which records
the assignment in the gradebook and writes ``release/<unit>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..labfolder import lab_files
from ..units import Unit, UnitError, labs_dir, load_unit
from ..variants import nbkeys, nbrelease
from . import release_checks
from .nbkernel import KERNEL_NAME, kernel_spec
from .release import build_folder_zip, lab_root

CONFIG = "nbgrader_config.py"
MANAGED_CONFIG = "infralab_nbgrader_config.py"
STATE_DIR = ".infralab"
DEFAULT_COURSE_ID = "infralab"
CELL_TIMEOUT_S = 180
# nbgrader's own defaults plus what running the lab leaves behind
IGNORE = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "runs", ".pytest_cache"]
INCLUDE_LINE = "load_subconfig(os.path.join(os.path.dirname(__file__), {name!r}))"


class CourseError(Exception):
    """A course directory that cannot be set up; the message names what is wrong."""


@dataclass(frozen=True)
class ReleaseResult:
    source: Path  # source/<unit>
    release: Path | None  # release/<unit>, None when generate_assignment was skipped
    files: int  # files staged into source/<unit>


def notebook_dir(unit: Unit) -> Path:
    return unit.unit_dir / "notebook"


def notebooks(unit: Unit) -> list[Path]:
    """The unit's nbgrader source notebooks."""
    found = sorted(notebook_dir(unit).glob("*.ipynb"))
    if not found:
        raise CourseError(f"unit {unit.id} has no notebook in {notebook_dir(unit)}")
    return found


def notebook_units() -> list[Unit]:
    """Every unit that has an nbgrader notebook."""
    return [load_unit(p.parent.name) for p in sorted(labs_dir().glob("*/notebook")) if p.is_dir()]


def _write_text(path: Path, text: str) -> None:
    """Write atomically: readers see the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def managed_config(course_id: str, variants: str = "") -> str:
    exclude = {unit.id: list(unit.editable) for unit in notebook_units()}
    return f"""# Written by `infralab release nbgrader`, rewritten on every run: put your own
# settings in nbgrader_config.py after the line that loads this file.
import os
from pathlib import Path

c = get_config()  # noqa: F821
_ROOT = Path(__file__).resolve().parent
c.CourseDirectory.root = str(_ROOT)
c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.ignore = {IGNORE!r}

# Notebooks run in the kernel written by the release command: the grader's sandbox.
_KERNELS = str(_ROOT / {STATE_DIR!r} / "jupyter")
if _KERNELS not in os.environ.get("JUPYTER_PATH", "").split(os.pathsep):
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (_KERNELS, os.environ.get("JUPYTER_PATH")) if p
    )
c.ExecutePreprocessor.kernel_name = {KERNEL_NAME!r}
c.Execute.timeout = {CELL_TIMEOUT_S}
c.Execute.iopub_timeout = 30  # a busy grading machine can be slow to flush a cell's output

# The files students edit are graded as submitted, not replaced by the instructor's copies.
c.Autograde.exclude_overwriting = {json.dumps(exclude)}

# Before autograde reads or copies anything, every link, device, FIFO and socket under
# submitted/ is replaced by a one-line note (grader.course.nbsubmitted): only plain files
# of a submission are graded, whichever route brought them.
from grader.course import nbsubmitted  # noqa: E402

nbsubmitted.install()

# Autograding runs each notebook in the sandboxed kernel and scores every autograded cell
# outside it (grader.course.nbautograde); keep this line if you change the preprocessors.
from grader.course.nbautograde import autograde_preprocessors  # noqa: E402

c.Autograde.autograde_preprocessors = autograde_preprocessors()
{variants}"""


def user_config() -> str:
    include = INCLUDE_LINE.format(name=MANAGED_CONFIG)
    return f"""# nbgrader configuration of this course. The infra-lab settings live in
# {MANAGED_CONFIG} (rewritten by `infralab release nbgrader`);
# add your own settings below the line that loads it.
import os

c = get_config()  # noqa: F821
{include}  # noqa: F821
"""


def write_config(course: Path, course_id: str, variants: str = "") -> None:
    """Create ``nbgrader_config.py`` once and (re)write the managed settings it loads."""
    config = course / CONFIG
    include = INCLUDE_LINE.format(name=MANAGED_CONFIG)
    if config.exists() and include not in config.read_text(encoding="utf-8"):
        raise CourseError(
            f"{config} exists but does not load {MANAGED_CONFIG}; add this line to it: {include}"
        )
    _write_text(course / MANAGED_CONFIG, managed_config(course_id, variants))
    if not config.exists():
        _write_text(config, user_config())


def write_kernel(course: Path) -> Path:
    """The grading kernelspec: ``nbkernel``'s launcher, run by this very interpreter (which has
    ipykernel and the grader), that starts the kernel inside the sandbox."""
    try:
        import ipykernel  # noqa: F401
    except ImportError:
        raise CourseError(
            "ipykernel is not installed in this Python: run `bash scripts/setup.sh nbgrader` in "
            "the repository (it installs the staff package editable with the nbgrader extra)"
        ) from None
    spec = kernel_spec()
    path = course / STATE_DIR / "jupyter" / "kernels" / KERNEL_NAME / "kernel.json"
    _write_text(path, json.dumps(spec, indent=1) + "\n")
    return path


def stage_source(unit: Unit, course: Path) -> tuple[Path, int]:
    """Replace ``source/<unit>`` by the lab folder as shipped plus the unit's notebooks."""
    state = course / STATE_DIR
    state.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"stage-{unit.id}-", dir=state))
    try:
        count = 0
        shipped = lab_files(unit) | {path.name: path for path in notebooks(unit)}
        for rel, path in shipped.items():
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
            count += 1
        target = course / "source" / unit.id
        target.parent.mkdir(parents=True, exist_ok=True)
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f"old-{unit.id}-", dir=state))
            os.replace(target, old / unit.id)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target, count


def nbgrader(course: Path, *args: str, timeout: float | None = 600) -> subprocess.CompletedProcess:
    """Run ``python -m nbgrader ARGS`` in the course directory (its config applies).

    nbgrader starts helper programs by name (``alembic`` for the gradebook schema), so this
    interpreter's scripts folder goes first on PATH even when the virtualenv is not activated.
    """
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": os.pathsep.join([scripts, os.environ.get("PATH", os.defpath)])}
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def generate_assignment(course: Path, unit: Unit) -> Path:
    """``release/<unit>/``, and the same folder zipped for an LMS as
    ``release/infra-lab-<unit>-nbgrader.zip`` (unpacking to ``infra-lab-<unit>/``, beside
    other units' folders)."""
    done = nbgrader(course, "generate_assignment", unit.id, "--force")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
        raise CourseError("nbgrader generate_assignment failed:\n" + "\n".join(tail))
    folder = course / "release" / unit.id
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    shipped = {p.relative_to(folder).as_posix(): p for p in files}
    build_folder_zip(shipped, lab_root(unit), release_zip(course, unit))
    return folder


def release_zip(course: Path, unit: Unit) -> Path:
    return course / "release" / f"{lab_root(unit)}-nbgrader.zip"


def release_nbgrader(
    unit: Unit, course: Path, course_id: str = DEFAULT_COURSE_ID, generate: bool = True, secret=None
) -> ReleaseResult:
    """Set up the course for ``unit``, generate the student version (``secret``: variants)."""
    course = Path(course).resolve()
    variants = nbkeys.autograde_config(secret) if secret is not None else ""
    if course.exists() and not course.is_dir():
        raise CourseError(f"{course} exists and is not a directory")
    if not course_id.replace("-", "").replace("_", "").isalnum():
        raise CourseError(f"course id {course_id!r}: use letters, digits, '-' and '_' only")
    notebooks(unit)  # fail before writing anything
    course.mkdir(parents=True, exist_ok=True)
    write_config(course, course_id, variants)
    write_kernel(course)
    source, count = stage_source(unit, course)
    release = generate_assignment(course, unit) if generate else None
    return ReleaseResult(source, release, count)


def _command(args) -> int:
    try:
        unit = load_unit(args.unit)
        if not args.allow_stale_starter and (stale := release_checks.stale_starter(unit)):
            raise CourseError(stale)  # source/<unit>/ is the lab folder: not a stale one
        roster = nbrelease.checked_roster(args)  # before anything is written
        result = release_nbgrader(
            unit, Path(args.course), args.course_id, not args.no_generate, args.secret
        )
        nbrelease.from_roster(unit, Path(args.course), roster)
    except (CourseError, UnitError) as exc:
        print(f"infralab release nbgrader: error: {exc}", file=sys.stderr)
        return 2
    print(f"staged {result.files} files in {result.source}")
    if result.release is not None:
        print(f"generated the student version in {result.release}")
        print(f"and zipped it for an LMS: {release_zip(Path(args.course).resolve(), unit)}")
    return 0


def add_parser(release_commands) -> argparse.ArgumentParser:
    """Register ``release nbgrader`` under the ``release`` subcommand's subparsers."""
    parser = release_commands.add_parser(
        "nbgrader",
        help="create or update an nbgrader course directory and generate the assignment",
        description="Write nbgrader_config.py, the grading kernel and source/<unit>/ into DIR, "
        "then run `nbgrader generate_assignment <unit> --force` there.",
    )
    parser.add_argument("--unit", required=True)
    parser.add_argument("--course", required=True, metavar="DIR", help="course directory")
    parser.add_argument("--course-id", default=DEFAULT_COURSE_ID, help="nbgrader course id")
    parser.add_argument(
        "--no-generate", action="store_true", help="stage source/ only, skip generate_assignment"
    )
    nbrelease.add_arguments(parser)
    parser.add_argument(
        release_checks.STALE_FLAG,
        release_checks.STALE_FLAG_OLD,
        dest="allow_stale_starter",
        action="store_true",
        help="stage the lab folder although starter sync would change it",
    )
    parser.set_defaults(handler=lambda args, extra: _command(args))
    return parser
