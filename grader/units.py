"""Units as described by ``labs/<unit>/unit.yaml``; every staff tool starts here.

Two roots: the code root (this checkout: ``grader/``, the engine packages ``servesim/`` and
``realdevice/``, ``site/``) and the course root (``labs/``, ``starter/``, ``solutions/``,
``traces/``, ``dist/``). They are the same folder unless ``INFRALAB_ROOT`` (or ``infralab
--root``) points the tools at another course, e.g. a throwaway unit in a temp folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parent.parent
REPO_ROOT = CODE_ROOT  # the checkout; course files resolve against course_root()
ROOT_ENV = "INFRALAB_ROOT"
ENGINE_PACKAGES = ("servesim", "realdevice")  # top-level packages: the one engine source


def course_root() -> Path:
    """The folder holding ``labs/`` and the unit folders: ``$INFRALAB_ROOT`` or the checkout."""
    return Path(os.environ.get(ROOT_ENV) or CODE_ROOT).resolve()


def labs_dir() -> Path:
    return course_root() / "labs"


def __getattr__(name: str):
    if name == "LABS_DIR":  # read when imported, so it follows INFRALAB_ROOT
        return labs_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnitError(Exception):
    """A unit that does not exist or whose unit.yaml is unusable."""


@dataclass(frozen=True)
class Unit:
    id: str
    doc: dict  # the whole unit.yaml, for the parts a single tool needs
    course_root: Path = field(default_factory=course_root)
    config_dir: Path | None = None  # the folder of unit.yaml (default labs/<id>)
    per_student = False  # one student's variant of it (``grader.variants``): a class has many

    @property
    def unit_dir(self) -> Path:
        """``labs/<id>``: unit.yaml and the unit's plug-ins (notebook, mutants, templates)."""
        return self.config_dir or self.course_root / "labs" / self.id

    @property
    def title(self) -> str:
        return self.doc["title"]

    @cached_property  # asked for several times per case graded
    def lab_dir(self) -> Path:
        """unit.yaml's ``lab_folder`` (``starter/<id>``): the unit's own lab files. A lab
        folder is these and the engine packages, put together by ``grader.labfolder``."""
        return self.course_root / self.doc["lab_folder"]

    @property
    def solutions_dir(self) -> Path:
        return self.course_root / self.doc["solutions"]

    @cached_property  # asked for several times per case graded
    def traces_dir(self) -> Path:
        return self.course_root / "traces" / self.id

    @property
    def mutants_dir(self) -> Path:
        return self.unit_dir / self.doc.get("mutants", "mutants")

    @property
    def editable(self) -> tuple[str, ...]:
        return tuple(self.doc["editable"])

    @property
    def device(self) -> dict:
        return dict(self.doc["device"])

    @property
    def policies(self) -> list[dict]:
        return list(self.doc["policies"])

    @property
    def engine_packages(self) -> tuple[str, ...]:
        """The engine packages (code root) that join the lab folder when it is made."""
        return tuple(self.doc.get("engine_packages", ENGINE_PACKAGES))

    @property
    def public_traces(self) -> tuple[str, ...]:
        return tuple(self.doc["public_traces"])


def unit_ids(labs: Path | None = None) -> list[str]:
    """Every unit of the course: the folders of ``labs/`` holding a unit.yaml, sorted."""
    return sorted(p.parent.name for p in Path(labs or labs_dir()).glob("*/unit.yaml"))


def load_unit(unit_id: str, labs: Path | None = None) -> Unit:
    """The unit ``labs/<unit_id>/unit.yaml``, checked against ``schemas/unit.schema.json``.

    ``labs`` replaces the course's ``labs/`` folder as the source of unit.yaml only (the lab
    folder, solutions and traces stay in the course root).
    """
    from . import checkcache

    folder = Path(labs or labs_dir())
    path = folder / unit_id / "unit.yaml"
    if not path.is_file():
        known = unit_ids(folder)
        raise UnitError(f"unknown unit '{unit_id}' (known: {', '.join(known) or 'none'})")
    text = path.read_text(encoding="utf-8")
    doc = checkcache.recall(text)
    if doc is None:
        doc = _checked(text, path)
        checkcache.remember(text, doc)
    if doc.get("id", unit_id) != unit_id:
        raise UnitError(f"{path}: id '{doc['id']}' does not match the folder name '{unit_id}'")
    return Unit(unit_id, doc, config_dir=None if labs is None else folder / unit_id)


def _checked(text: str, path: Path) -> dict:
    """unit.yaml's text parsed and checked against its schema (``UnitError`` if it fails)."""
    import yaml

    from .schema import SchemaError, validate

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML has it
    try:
        doc = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise UnitError(f"{path}: not valid YAML ({exc})") from None
    try:
        validate(doc, "unit", str(path))
    except SchemaError as exc:
        raise UnitError(str(exc)) from None
    return doc
