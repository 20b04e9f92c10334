"""The lab folder's own description (``lab.json``), generated from the unit's ``unit.yaml``."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .device import DeviceProfile

LAB_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class PolicySpec:
    name: str
    function: str
    params: dict  # name -> {"default", "min", "help"}
    admit: str | None = None  # admission: the function called at every arrival


@dataclass(frozen=True)
class LabPart:
    """A part of the lab as the handout numbers it (lab.json ``parts``, from unit.yaml)."""

    id: str
    number: int
    title: str
    kind: str  # "core"; "optional" and "challenge" parts' tests skip until started
    functions: tuple[str, ...]  # "file.py:function"

    @property
    def skips_until_started(self) -> bool:
        return self.kind != "core"


@dataclass(frozen=True)
class LabConfig:
    unit: str
    title: str
    device: DeviceProfile
    policies: tuple[PolicySpec, ...]
    public_traces: tuple[str, ...]
    folder: Path
    extended_runs: bool = False  # lab.json "runFile": "extended" (every outcome, limits)
    parts: tuple[LabPart, ...] = ()

    @property
    def traces_dir(self) -> Path:
        return self.folder / "traces"

    def policy(self, name: str) -> PolicySpec:
        return next(p for p in self.policies if p.name == name)

    def part_of(self, filename: str, function: str) -> LabPart | None:
        """The part that asks for ``function`` of ``filename`` (None when no part names it)."""
        wanted = f"{filename}:{function}"
        return next((p for p in self.parts if wanted in p.functions), None)


_LOADED: dict = {}  # lab.json path -> (its inode, size and mtime, the LabConfig)


def load_lab(folder: Path = LAB_DIR) -> LabConfig:
    """The lab folder's ``lab.json``, read again only when the file changed. The grader's case
    runner loads it before it forks a process per case, so no case pays for it again."""
    path = Path(folder) / "lab.json"
    info = os.stat(path)
    signature = (info.st_ino, info.st_size, info.st_mtime_ns)
    known = _LOADED.get(str(path))
    if known is None or known[0] != signature:
        known = _LOADED[str(path)] = (signature, _read_lab(path, Path(folder)))
    return known[1]


def _read_lab(path: Path, folder: Path) -> LabConfig:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return LabConfig(
        unit=doc["unit"],
        title=doc["title"],
        device=DeviceProfile.from_json(doc["device"], source="lab.json device"),
        policies=tuple(
            PolicySpec(p["name"], p["function"], p["params"], p.get("admit"))
            for p in doc["policies"]
        ),
        public_traces=tuple(doc["publicTraces"]),
        folder=folder,
        extended_runs=doc.get("runFile", "basic") == "extended",
        parts=tuple(
            LabPart(p["id"], p["number"], p["title"], p["kind"], tuple(p["functions"]))
            for p in doc.get("parts", ())
        ),
    )
