"""Units as described by ``labs/<unit>/unit.yaml``; every staff tool starts here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
LABS_DIR = REPO_ROOT / "labs"
ENGINE_PACKAGES = ("servesim", "realdevice")  # top-level packages: the one engine source


class UnitError(Exception):
    """A unit that does not exist or whose unit.yaml is unusable."""


@dataclass(frozen=True)
class Unit:
    id: str
    doc: dict  # the whole unit.yaml, for the parts a single tool needs

    @property
    def title(self) -> str:
        return self.doc["title"]

    @property
    def lab_dir(self) -> Path:
        return REPO_ROOT / self.doc["lab_folder"]

    @property
    def solutions_dir(self) -> Path:
        return REPO_ROOT / self.doc["solutions"]

    @property
    def traces_dir(self) -> Path:
        return REPO_ROOT / "traces" / self.id

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
        """The engine packages the lab folder carries as generated copies."""
        return tuple(self.doc.get("engine_packages", ENGINE_PACKAGES))

    @property
    def public_traces(self) -> tuple[str, ...]:
        return tuple(self.doc["public_traces"])

    def lab_json(self) -> dict:
        """What the lab folder's lab.json must hold, derived from unit.yaml.

        ``run_file: extended`` (unit 08) turns on the run file's status and recompute fields;
        without it lab.json does not mention ``runFile`` and runs keep unit 07's format.
        """
        doc = {
            "unit": self.id,
            "title": self.title,
            "editable": list(self.editable),
            "device": self.device,
            "policies": self.policies,
            "publicTraces": list(self.public_traces),
        }
        if "run_file" in self.doc:
            doc["runFile"] = self.doc["run_file"]
        return doc


REQUIRED = ("title", "lab_folder", "solutions", "editable", "device", "policies", "public_traces")


def load_unit(unit_id: str, labs_dir: Path = LABS_DIR) -> Unit:
    path = Path(labs_dir) / unit_id / "unit.yaml"
    if not path.is_file():
        known = sorted(p.parent.name for p in Path(labs_dir).glob("*/unit.yaml"))
        raise UnitError(f"unknown unit '{unit_id}' (known: {', '.join(known) or 'none'})")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UnitError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(doc, dict):
        raise UnitError(f"{path}: must be a mapping")
    missing = [key for key in REQUIRED if key not in doc]
    if missing:
        raise UnitError(f"{path}: missing field(s) {', '.join(missing)}")
    if doc.get("id", unit_id) != unit_id:
        raise UnitError(f"{path}: id '{doc['id']}' does not match the folder name '{unit_id}'")
    return Unit(unit_id, doc)
