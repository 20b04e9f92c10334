"""Generate the lab folder's derived files from the solutions and unit.yaml.

- each editable file: the solution with every ``### BEGIN SOLUTION`` / ``### END SOLUTION``
  region replaced by a stub that raises ``NotImplementedError``;
- ``lab.json``: the parts of unit.yaml the standard-library lab needs;
- ``tests/expected/<id>.json``: the reference token times of the unit's ``snapshots``
  (unit.yaml), which the public tests compare against;
- the points table in the handout (``README.md``, between the markers of
  ``grader.course.points``), from unit.yaml's parts and cases and the notebook.

The engine packages (``servesim``, ``realdevice``) are never copied here: they join a lab
folder when one is made (``grader.labfolder``). Files left under their names in the unit's own
folder are stale copies, which ``sync`` removes and ``stale_files`` reports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import servesim

from .. import labfolder, reference
from ..parts import unit_parts
from ..units import Unit
from . import points

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_DEF = re.compile(r"^\s*def (\w+)\(")


class SolutionMarkerError(ValueError):
    pass


def stub_source(source: str, filename: str, keep=frozenset()) -> str:
    """The starter version of a solution file; the functions named in ``keep`` keep their
    solution (a lab with some parts done, for tests)."""
    out, inside, function = [], False, None
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        stripped = line.strip()
        if not inside and (match := _DEF.match(line)):
            function = match.group(1)
        if stripped == BEGIN:
            if inside:
                raise SolutionMarkerError(f"{filename}:{number}: nested {BEGIN}")
            inside = True
            if function in keep:
                continue
            indent = line[: len(line) - len(line.lstrip())]
            message = f"{function}() is not implemented yet" if function else "not implemented"
            out.append(f"{indent}# YOUR CODE HERE\n")
            out.append(f'{indent}raise NotImplementedError("{message}")\n')
        elif stripped == END:
            if not inside:
                raise SolutionMarkerError(f"{filename}:{number}: {END} without {BEGIN}")
            inside = False
        elif not inside or function in keep:
            out.append(line)
    if inside:
        raise SolutionMarkerError(f"{filename}: {BEGIN} is never closed")
    return "".join(out)


def snapshot_specs(unit: Unit) -> list[dict]:
    """The expected-output files the public tests compare against.

    A unit lists them in unit.yaml ``snapshots``: a public trace's name (every policy at its
    defaults on the unit's device) or ``{id, trace, device?, policies?, params?}`` (``device`` a
    profile file in the lab folder, ``policies`` a subset, ``params`` overrides).
    """
    return [
        {"id": spec, "trace": spec} if isinstance(spec, str) else dict(spec)
        for spec in unit.doc.get("snapshots", ())
    ]


def _snapshot_device(unit: Unit, spec: dict):
    if "device" not in spec:
        return reference.device_profile(unit)
    doc = json.loads((unit.lab_dir / spec["device"]).read_text(encoding="utf-8"))
    return servesim.DeviceProfile.from_json(doc.get("device", doc), source=spec["device"])


def snapshot(unit: Unit, spec: dict | str) -> dict:
    """Reference token times per policy label and request (and each request's status, for
    extended run files), at the unit's default parameters unless the spec overrides them."""
    spec = {"id": spec, "trace": spec} if isinstance(spec, str) else spec
    trace = reference.load_trace(unit, spec["trace"])
    device = _snapshot_device(unit, spec)
    extended = unit.doc.get("run_file") == "extended"
    runs = {}
    for policy in unit.policies:
        if "policies" in spec and policy["name"] not in spec["policies"]:
            continue
        params = {name: meta["default"] for name, meta in policy["params"].items()}
        params |= {k: v for k, v in spec.get("params", {}).items() if k in params}
        run = reference.run_reference(unit, trace, policy["name"], params, device)
        runs[policy["name"]] = {
            "params": params,
            "tokenTimesMs": {r["id"]: r["tokenTimesMs"] for r in run["requests"]},
        }
        if extended:
            runs[policy["name"]]["status"] = {r["id"]: r["status"] for r in run["requests"]}
    return {
        "generatedBy": f"infralab starter sync --unit {unit.id}",
        "trace": spec["trace"],
        "device": device.to_json(),
        "runs": runs,
    }


def snapshot_text(unit: Unit, spec: dict) -> str:
    """The text of a snapshot's ``tests/expected/<id>.json`` (``snapshot`` as written)."""
    return _json(snapshot(unit, spec))


def lab_json(unit: Unit) -> dict:
    """What the lab folder's lab.json must hold, derived from unit.yaml.

    ``run_file: extended`` (unit 08) turns on the run file's status and recompute fields;
    without it lab.json does not mention ``runFile`` and runs keep unit 07's format.
    ``parts`` (when unit.yaml has them) lets the public tests name a part and skip the
    optional ones until they are started.
    """
    doc = {
        "unit": unit.id,
        "title": unit.title,
        "editable": list(unit.editable),
        "device": unit.device,
        "policies": [{k: v for k, v in p.items() if k != "fast_path"} for p in unit.policies],
        "publicTraces": list(unit.public_traces),
    }
    if "run_file" in unit.doc:
        doc["runFile"] = unit.doc["run_file"]
    if "parts" in unit.doc:
        doc["parts"] = [part.to_lab_json() for part in unit_parts(unit)]
    return doc


def _json(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def expected_files(unit: Unit) -> dict[Path, str]:
    """Every derived file of the lab folder and the text it must have."""
    files = {}
    for name in unit.editable:
        source = (unit.solutions_dir / name).read_text(encoding="utf-8")
        files[unit.lab_dir / name] = stub_source(source, name)
    files[unit.lab_dir / "lab.json"] = _json(lab_json(unit))
    readme = unit.lab_dir / "README.md"
    if readme.is_file():
        files[readme] = points.handout_text(unit, readme.read_text(encoding="utf-8"))
    for spec in snapshot_specs(unit):
        files[unit.lab_dir / "tests" / "expected" / f"{spec['id']}.json"] = snapshot_text(
            unit, spec
        )
    return files


def stale_files(unit: Unit) -> list[Path]:
    """Derived files that are missing or differ, then stale engine copies."""
    return [
        path
        for path, text in expected_files(unit).items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ] + labfolder.engine_copies(unit)


def sync(unit: Unit) -> list[Path]:
    """Rewrite the derived files that differ; return the ones written."""
    from servesim.runfile import write_atomic

    written = []
    for path, text in expected_files(unit).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomic(path, text)
            written.append(path)
    for path in labfolder.engine_copies(unit):
        path.unlink()
        written.append(path)
    return written
