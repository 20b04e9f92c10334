"""Generate the lab folder's derived files from the solutions and unit.yaml.

- each editable file: the solution with every ``### BEGIN SOLUTION`` / ``### END SOLUTION``
  region replaced by a stub that raises ``NotImplementedError``;
- ``lab.json``: the parts of unit.yaml the standard-library lab needs;
- ``tests/expected/<trace>.json``: the reference token times of the lesson traces that the
  public tests compare against (traces whose figures the lesson already prints);
- the engine packages (``servesim``, ``realdevice``): verbatim copies of the repository's one
  engine source, so that every lab folder runs with python3 alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import reference
from .units import REPO_ROOT, Unit

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
SNAPSHOT_TRACES = ("mixed", "prefill-only")
_DEF = re.compile(r"^\s*def (\w+)\(")


class SolutionMarkerError(ValueError):
    pass


def stub_source(source: str, filename: str) -> str:
    """The starter version of a solution file."""
    out, inside, function = [], False, None
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        stripped = line.strip()
        if match := _DEF.match(line):
            function = match.group(1)
        if stripped == BEGIN:
            if inside:
                raise SolutionMarkerError(f"{filename}:{number}: nested {BEGIN}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            message = f"{function}() is not implemented yet" if function else "not implemented"
            out.append(f"{indent}# YOUR CODE HERE\n")
            out.append(f'{indent}raise NotImplementedError("{message}")\n')
        elif stripped == END:
            if not inside:
                raise SolutionMarkerError(f"{filename}:{number}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise SolutionMarkerError(f"{filename}: {BEGIN} is never closed")
    return "".join(out)


def snapshot_specs(unit: Unit) -> list[dict]:
    """The expected-output files the public tests compare against.

    A unit lists them in unit.yaml ``snapshots`` (``{id, trace, device?, policies?, params?}``:
    ``device`` a profile file in the lab folder, ``policies`` a subset, ``params`` overrides);
    without that key, every policy at its defaults on each lesson trace of ``SNAPSHOT_TRACES``.
    """
    if "snapshots" in unit.doc:
        return list(unit.doc["snapshots"])
    return [{"id": t, "trace": t} for t in SNAPSHOT_TRACES if t in unit.public_traces]


def _snapshot_device(unit: Unit, spec: dict):
    if "device" not in spec:
        return reference.device_profile(unit)
    servesim = reference.engine(unit)
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


def _json(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def engine_files(unit: Unit) -> dict[Path, str]:
    """The lab folder's copy of each engine package the unit ships, file by file."""
    files = {}
    for package in unit.engine_packages:
        source = REPO_ROOT / package
        for path in sorted(source.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                files[unit.lab_dir / package / path.relative_to(source)] = path.read_text(
                    encoding="utf-8"
                )
    return files


def orphan_files(unit: Unit) -> list[Path]:
    """Files in the lab's engine copies that the engine source no longer has."""
    expected = engine_files(unit)
    return [
        path
        for package in unit.engine_packages
        for path in sorted((unit.lab_dir / package).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path not in expected
    ]


def expected_files(unit: Unit) -> dict[Path, str]:
    """Every derived file of the lab folder and the text it must have."""
    files = engine_files(unit)
    for name in unit.editable:
        source = (unit.solutions_dir / name).read_text(encoding="utf-8")
        files[unit.lab_dir / name] = stub_source(source, name)
    files[unit.lab_dir / "lab.json"] = _json(unit.lab_json())
    for spec in snapshot_specs(unit):
        files[unit.lab_dir / "tests" / "expected" / f"{spec['id']}.json"] = _json(
            snapshot(unit, spec)
        )
    return files


def stale_files(unit: Unit) -> list[Path]:
    """Derived files that are missing or differ, then engine copies with no source."""
    return [
        path
        for path, text in expected_files(unit).items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ] + orphan_files(unit)


def sync(unit: Unit) -> list[Path]:
    """Rewrite the derived files that differ; return the ones written."""
    from servesim.runfile import write_atomic

    written = []
    for path, text in expected_files(unit).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomic(path, text)
            written.append(path)
    for path in orphan_files(unit):
        path.unlink()
        written.append(path)
    return written
