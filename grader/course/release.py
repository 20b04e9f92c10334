"""Release builders: the student lab zip (the lab folder as shipped, under
``infra-lab-<unit>/``) and the Gradescope autograder bundle.

Every unit's zips are named after the unit and the student's unpacks into a folder of its own,
so the labs of two units unpacked in one place sit side by side and nothing is overwritten:
``infra-lab-unit07.zip`` holds ``infra-lab-unit07/``, ``infra-lab-unit08.zip``
``infra-lab-unit08/``; Gradescope's bundle is ``infra-lab-<unit>-autograder.zip`` and the
nbgrader release zip ``infra-lab-<unit>-nbgrader.zip`` (``grader.course.nbgrader_course``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import zipfile
from pathlib import Path

from ..diagnosis.catalogue import FILE as CATALOGUE
from ..labfolder import lab_files, tree
from ..units import CODE_ROOT, Unit

ZIP_PREFIX = "infra-lab"


def lab_root(unit: Unit) -> str:
    """The folder a unit's lab unpacks into: ``infra-lab-<unit>``."""
    return f"{ZIP_PREFIX}-{unit.id}"


def student_zip_name(unit: Unit) -> str:
    return f"{lab_root(unit)}.zip"


def autograder_zip_name(unit: Unit) -> str:
    return f"{lab_root(unit)}-autograder.zip"


def build_student_zip(unit: Unit, dest: Path) -> Path:
    """Write the student lab zip (the assembled lab folder, ``grader.labfolder``) to ``dest``
    atomically (fixed timestamps: reproducible bytes)."""
    return build_folder_zip(lab_files(unit), lab_root(unit), dest)


def build_folder_zip(files: dict[str, Path], root: str, dest: Path) -> Path:
    """``files`` (relative path -> source) zipped under ``root/`` with their modes, atomically."""
    entries = []
    for rel, path in files.items():
        mode = 0o755 if os.access(path, os.X_OK) else 0o644
        entries.append((f"{root}/{rel}", path.read_bytes(), mode))
    return _write_zip(dest, entries)


# --- Gradescope autograder bundle -----------------------------------------------------------

AUTOGRADER_SCRIPTS = Path(__file__).with_name("autograder")  # setup.sh, run_autograder
BUNDLE_CODE = ("grader", "servesim")  # the staff package and the engine it verifies with
BUNDLE_SUFFIXES = (".py", ".json")  # modules and the JSON Schemas of grader/schemas


def _tree(folder: Path, base: Path, suffixes: tuple[str, ...] | None = None) -> dict[str, Path]:
    """Files under ``folder`` by their path relative to ``base`` (caches and runs left out)."""
    prefix = folder.relative_to(base)
    return {
        (prefix / rel).as_posix(): path
        for rel, path in sorted(tree(folder).items(), key=lambda item: item[1])
        if suffixes is None or path.suffix in suffixes
    }


def autograder_files(unit: Unit) -> dict[str, Path]:
    """Bundle path -> source file: what grading needs and nothing else (no solutions).

    The bundle unpacks to ``/autograder/source`` with the code root's layout (``grader/``,
    ``servesim/`` and the unit's other engine packages) and the course root's
    (``labs/<unit>/unit.yaml``, the catalogue of mistakes ``diagnoses.yaml``, the unit's own lab
    files, ``traces/<unit>/{hidden,golden}``), so the grader assembles the lab folder and finds
    the unit there exactly as at home, and says the same. The mutants the catalogue names stay
    out: each is a solution with one mistake in it.
    """
    files: dict[str, Path] = {}
    for package in dict.fromkeys((*BUNDLE_CODE, *unit.engine_packages)):
        files.update(_tree(CODE_ROOT / package, CODE_ROOT, BUNDLE_SUFFIXES))
    root = unit.course_root
    for folder in (unit.lab_dir, unit.traces_dir / "hidden", unit.traces_dir / "golden"):
        files.update(_tree(folder, root))
    files[f"labs/{unit.id}/unit.yaml"] = unit.unit_dir / "unit.yaml"
    catalogue = unit.unit_dir / CATALOGUE
    if catalogue.is_file():
        files[f"labs/{unit.id}/{CATALOGUE}"] = catalogue
    for name in ("setup.sh", "run_autograder"):
        files[name] = AUTOGRADER_SCRIPTS / name
    return files


def requirements() -> str:
    """What grading needs (pyproject's core ``dependencies``), pinned to the versions here."""
    import tomllib
    from importlib.metadata import version

    with open(CODE_ROOT / "pyproject.toml", "rb") as handle:
        deps = tomllib.load(handle)["project"]["dependencies"]
    names = [re.match(r"[A-Za-z0-9._-]+", dep).group(0) for dep in deps]
    return "".join(f"{name}=={version(name)}\n" for name in names)


def build_autograder_zip(unit: Unit, dest: Path, variants=None) -> Path:
    """Write Gradescope's bundle for ``unit`` (``autograder_zip_name``) to ``dest`` atomically;
    Gradescope wants ``setup.sh`` at its top, so it has no folder of its own. ``variants``:
    ``(files, data)`` of a class's variants (``grader.variants.bundle``), shipped too."""
    files = autograder_files(unit)
    extra = {
        "requirements.txt": requirements().encode(),
        "autograder.json": (json.dumps(bundle_stamp(unit), indent=2) + "\n").encode(),
    }
    if variants is not None:
        files = {**files, **variants[0]}
        extra.update(variants[1])
    return _write_zip(
        dest,
        [(name, path.read_bytes(), _mode(path, name)) for name, path in sorted(files.items())]
        + [(name, data, 0o644) for name, data in extra.items()],
    )


def bundle_stamp(unit: Unit) -> dict:
    """``autograder.json``: the unit the bundle grades and the commit it was built from (None
    outside a git checkout), so a grade on Gradescope can be traced to the code that gave it."""
    return {"unit": unit.id, "commit": source_commit(unit.course_root)}


def source_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (``git rev-parse HEAD``), or None without one."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", commit) else None


def _mode(path: Path, name: str) -> int:
    if name in ("setup.sh", "run_autograder") or os.access(path, os.X_OK):
        return 0o755
    return 0o644


def _write_zip(dest: Path, entries: list[tuple[str, bytes, int]]) -> Path:
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data, mode in entries:
                info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
                info.external_attr = mode << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest
