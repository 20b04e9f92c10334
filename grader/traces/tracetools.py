"""``infralab trace new|import|check``: write and validate traces (validation is the lab's own)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import servesim
import yaml

from ..jsonio import write_text_atomic
from ..units import Unit
from .azure import AZURE_ATTRIBUTION, import_azure
from .errors import DataMissing, SpecError
from .tracegen import load_yaml_or_json, trace_from_spec

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def trace_text(doc: dict) -> str:
    """A trace as JSON with one request per line (how the lab's own traces look)."""
    head = {k: v for k, v in doc.items() if k != "requests"}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append('  "requests": [')
    rows = [json.dumps(r, ensure_ascii=False, allow_nan=False) for r in doc["requests"]]
    lines.extend(f"    {row}," for row in rows[:-1])
    lines.append(f"    {rows[-1]}")
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def validate_doc(unit: Unit | None, doc, source: str):
    """Validate a trace document with the lab's parse_trace (raises servesim.TraceError)."""
    return servesim.parse_trace(doc, source=source)


def read_any_trace(unit: Unit | None, path: Path, data_dir: Path | None = None):
    """A trace file (JSON, or YAML: a trace or a spec), validated like the lab does."""
    path = Path(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            doc = load_yaml_or_json(path, "trace")
        except SpecError as exc:
            raise servesim.TraceError(str(exc)) from None
        if isinstance(doc, dict) and ("generate" in doc or "import" in doc):
            try:
                doc = trace_from_spec(doc, str(path), data_dir)
            except SpecError as exc:
                raise servesim.TraceError(str(exc)) from None
        return servesim.parse_trace(doc, source=str(path))
    return servesim.read_trace_file(path)


def hidden_path(unit: Unit, name: str) -> Path:
    return unit.traces_dir / "hidden" / f"{name}.json"


def spec_trace(unit: Unit, spec_path: Path, data_dir: Path | None = None) -> dict:
    """The validated trace document a spec file describes."""
    spec = load_yaml_or_json(spec_path)
    doc = trace_from_spec(spec, str(spec_path), data_dir)
    if not _NAME.match(doc["name"]):
        raise SpecError(f"{spec_path}: name must be letters, digits, '.', '_' or '-'")
    validate_doc(unit, doc, str(spec_path))
    return doc


def new_trace(unit: Unit, spec_path: Path, output: Path | None, data_dir=None) -> Path:
    doc = spec_trace(unit, spec_path, data_dir)
    dest = Path(output) if output else hidden_path(unit, doc["name"])
    write_text_atomic(dest, trace_text(doc))
    return dest


def import_trace(unit: Unit, csv_path: Path, output: Path | None, spec_out: Path | None, **kw):
    """Import an Azure window; write the trace (and, if asked, the spec that remakes it)."""
    doc = import_azure(Path(csv_path), **kw)
    if not _NAME.match(doc["name"]):
        raise SpecError(f"--name must be letters, digits, '.', '_' or '-', got {doc['name']!r}")
    validate_doc(unit, doc, doc["name"])
    dest = Path(output) if output else hidden_path(unit, doc["name"])
    spec_text = None
    if spec_out:
        spec = {
            "name": doc["name"],
            "import": {
                "azure": Path(csv_path).name,
                "start": kw["start"],
                "duration": kw["duration"],
                "scale": kw["scale"],
                **({"timeScale": kw["time_scale"]} if kw.get("time_scale") else {}),
                **({"maxRequests": kw["max_requests"]} if kw.get("max_requests") else {}),
            },
        }
        spec_text = (
            "# Made by `infralab trace import`; `infralab trace new --spec` remakes it.\n"
            f"# Data: {AZURE_ATTRIBUTION}\n"
        )
        spec_text += yaml.safe_dump(spec, sort_keys=False)
    write_text_atomic(dest, trace_text(doc))
    if spec_text is not None:
        write_text_atomic(Path(spec_out), spec_text)
    return dest, doc


@dataclass(frozen=True)
class CheckLine:
    path: Path
    ok: bool
    message: str


def check_unit_traces(unit: Unit, data_dir=None) -> list[CheckLine]:
    """Every trace of the unit (public, hidden) and every spec against the trace it made."""
    lines = []
    paths = sorted((unit.lab_dir / "traces").glob("*.json"))
    paths += sorted((unit.traces_dir / "hidden").glob("*.json"))
    for path in paths:
        lines.append(check_file(unit, path, data_dir))
    for spec_path in sorted((unit.traces_dir / "specs").glob("*.y*ml")):
        try:
            doc = spec_trace(unit, spec_path, data_dir)
        except DataMissing as exc:
            lines.append(CheckLine(spec_path, True, f"not checked here: {exc}"))
            continue
        except (SpecError, ValueError) as exc:
            lines.append(CheckLine(spec_path, False, str(exc)))
            continue
        target = hidden_path(unit, doc["name"])
        if not target.is_file():
            lines.append(CheckLine(spec_path, False, f"{target.name} was never made from it"))
        elif target.read_text(encoding="utf-8") != trace_text(doc):
            lines.append(
                CheckLine(spec_path, False, f"{target.name} differs from what the spec makes")
            )
        else:
            lines.append(CheckLine(spec_path, True, f"makes {target.name}"))
    return lines


def check_file(unit: Unit | None, path: Path, data_dir=None) -> CheckLine:
    try:
        trace = read_any_trace(unit, path, data_dir)
    except servesim.TraceError as exc:
        return CheckLine(Path(path), False, str(exc))
    return CheckLine(Path(path), True, f"{len(trace.requests)} requests")
