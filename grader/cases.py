"""Graded cases of a unit: trace x policy x parameters, from the ``grading`` part of unit.yaml.

A case names a trace (a public lab trace or a hidden one under ``traces/<unit>/hidden/``), a
policy, its parameters, optional device overrides (``overheadMs``, ``device``: any other device
field the lab's simulate.py has a flag for, e.g. ``maxActive`` -> ``--max-active``), an
optional ``queueCap`` and an optional metamorphic transform (ids relabelled, arrivals shifted)
that turns a known trace into one no answer can be keyed to.

A case's ``kind`` says how its run is judged (``grader.casekinds``): ``exact`` (default) compares
the run with the reference's golden run; ``script`` runs a given script of the lab folder on the
reference's run and compares its JSON answer with the reference's (a student-editable module
such as a measurement module); ``goodput`` scores a valid run by its goodput under the case's
SLO relative to the reference's.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from .jsonio import by_file, read_json
from .schema import SchemaError, validate
from .traces import metamorphic
from .units import Unit, UnitError

_CASE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
DEFAULT_TIMEOUT_S = 20.0  # wall-clock seconds per case (unit.yaml grading.timeout_s)
DEFAULT_SUBMISSION_TIMEOUT_S = 300.0  # per submission (grading.submission_timeout_s)


class Kind(Enum):
    EXACT = "exact"
    SCRIPT = "script"
    GOODPUT = "goodput"


class Visibility(Enum):
    PUBLIC = "public"
    HIDDEN = "hidden"


@dataclass(frozen=True)
class Case:
    id: str
    trace: str  # trace name
    policy: str
    params: dict
    part: str
    points: float
    visibility: Visibility
    overhead_ms: float | None = None  # None: the unit's device default
    transform: metamorphic.Transform | None = None
    device: dict = field(default_factory=dict)  # device JSON fields replacing the unit's
    queue_cap: int | None = None
    kind: Kind = Kind.EXACT
    script: str | None = None  # kind script: the lab folder's given script
    args: dict = field(default_factory=dict)  # kind script: what the script is asked
    slo: dict = field(default_factory=dict)  # kind goodput: {ttftMs, tpotMs}
    spec: dict = field(default_factory=dict, compare=False, repr=False)  # as written in unit.yaml

    @property
    def hidden(self) -> bool:
        return self.visibility is Visibility.HIDDEN

    def argv(self) -> list[str]:
        """simulate.py flags (besides --trace and --output) that run this case."""
        argv = ["--policy", self.policy]
        for name, value in self.params.items():  # simulate.py spells wait_ms --wait-ms
            argv += [f"--{name.replace('_', '-')}", str(value)]
        if self.overhead_ms is not None:
            argv += ["--overhead-ms", repr(float(self.overhead_ms))]
        for name, value in self.device.items():
            argv += [f"--{_kebab(name)}", str(value)]
        if self.queue_cap is not None:
            argv += ["--queue-cap", str(self.queue_cap)]
        return argv

    @property
    def setup_key(self) -> tuple:
        """What makes two cases run the same simulation (the transform aside)."""
        device = tuple(sorted(self.device.items()))
        params = tuple(sorted(self.params.items()))
        return (self.trace, self.policy, params, self.overhead_ms, device, self.queue_cap)


def _kebab(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "-" + m.group(1).lower(), name)


@dataclass(frozen=True)
class GradingConfig:
    cases: tuple[Case, ...]
    timeout_s: float
    submission_timeout_s: float = DEFAULT_SUBMISSION_TIMEOUT_S

    def by_id(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise UnitError(f"unknown case '{case_id}' (known: {', '.join(self.ids)})")

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases)

    @property
    def parts(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for case in self.cases:
            seen.setdefault(case.part, None)
        return tuple(seen)


_GRADINGS: dict[str, GradingConfig] = {}  # repr of what a grading is parsed from -> it


def load_grading(unit: Unit) -> GradingConfig:
    """The unit's graded cases; raises ``UnitError`` naming the first bad entry.

    Parsed once per content of unit.yaml (every submission of a batch asks again)."""
    key = repr((unit.id, unit.doc, unit.policies))
    if key not in _GRADINGS:
        _GRADINGS.clear()  # one unit at a time in practice: keep no more than one
        _GRADINGS[key] = _parse_grading(unit)
    return _GRADINGS[key]


def _parse_grading(unit: Unit) -> GradingConfig:
    doc = unit.doc.get("grading")
    where = f"labs/{unit.id}/unit.yaml: grading"
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list) or not doc["cases"]:
        raise UnitError(f"{where}: must be a mapping with a non-empty 'cases' list")
    policies = {p["name"]: p for p in unit.policies}
    cases, seen = [], set()
    for number, item in enumerate(doc["cases"], start=1):
        case = _parse_case(item, f"{where}.cases #{number}", policies)
        if case.id in seen:
            raise UnitError(f"{where}.cases #{number}: duplicate id '{case.id}'")
        seen.add(case.id)
        cases.append(case)
    _check_parts(unit, cases, where)
    timeouts = []
    for key, default in (
        ("timeout_s", DEFAULT_TIMEOUT_S),
        ("submission_timeout_s", DEFAULT_SUBMISSION_TIMEOUT_S),
    ):
        value = doc.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise UnitError(f"{where}.{key}: must be a number > 0")
        timeouts.append(float(value))
    return GradingConfig(tuple(cases), *timeouts)


def _check_parts(unit: Unit, cases: list[Case], where: str) -> None:
    """Every case's part is one of the unit's ``parts`` (when unit.yaml lists them)."""
    from .parts import unit_parts

    known = [p.id for p in unit_parts(unit)]
    for case in cases:
        if case.part not in known:
            raise UnitError(
                f"{where}: case '{case.id}': part '{case.part}' is not one of the unit's parts "
                f"({', '.join(known)})"
            )


def _parse_case(item, where: str, policies: dict) -> Case:
    """One case of unit.yaml: its shape from ``case.schema.json``, then what depends on the unit."""
    if isinstance(item, dict) and isinstance(item.get("id"), str) and _CASE_ID.match(item["id"]):
        where = f"{where} ('{item['id']}')"
    try:
        validate(item, "case", where)
    except SchemaError as exc:
        raise UnitError(str(exc)) from None
    policy = policies.get(item["policy"])
    if policy is None:
        raise UnitError(f"{where}: unknown policy '{item['policy']}'")
    params = dict(item.get("params") or {})
    for name, meta in policy["params"].items():
        params.setdefault(name, meta["default"])
    unknown = sorted(set(params) - set(policy["params"]))
    if unknown:
        raise UnitError(f"{where}: policy {policy['name']} has no parameter(s) {unknown}")
    for name, value in params.items():
        low = policy["params"][name].get("min", 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise UnitError(f"{where}: parameter {name} must be an integer >= {low}")
    transform = None
    if item.get("transform") is not None:
        try:
            transform = metamorphic.Transform.from_json(item["transform"])
        except ValueError as exc:
            raise UnitError(f"{where}: transform: {exc}") from None
    overhead = item.get("overheadMs")
    kind = Kind(item.get("kind", "exact"))
    if kind is Kind.SCRIPT and not item.get("script"):
        raise UnitError(f"{where}: a script case needs 'script' (a file of the lab folder)")
    if kind is Kind.GOODPUT and not item.get("slo"):
        raise UnitError(f"{where}: a goodput case needs 'slo' ({{ttftMs, tpotMs}})")
    return Case(
        id=item["id"],
        trace=item["trace"],
        policy=policy["name"],
        params=params,
        part=item.get("part", policy["name"]),
        points=float(item["points"]),
        visibility=Visibility(item["visibility"]),
        overhead_ms=None if overhead is None else float(overhead),
        transform=transform,
        device=dict(item.get("device") or {}),
        queue_cap=item.get("queueCap"),
        kind=kind,
        script=item.get("script"),
        args=dict(item.get("args") or {}),
        slo=dict(item.get("slo") or {}),
        spec=dict(item),
    )


def trace_path(unit: Unit, case: Case) -> Path:
    """The source file of a case's trace: hidden traces first for hidden cases, then public."""
    name = f"{case.trace}.json"  # os.path: this runs several times per case graded
    hidden = os.path.join(unit.traces_dir, "hidden", name)
    public = os.path.join(unit.lab_dir, "traces", name)
    order = (hidden, public) if case.hidden else (public, hidden)
    for path in order:
        if os.path.isfile(path):
            return Path(path)
    raise UnitError(f"case '{case.id}': trace '{case.trace}' not found (looked in {order[0]})")


def sha256_file(path: Path) -> str:
    return by_file(path, _sha256)


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def case_trace_doc(unit: Unit, case: Case) -> dict:
    """The trace document the case runs on (transformed when the case says so); read-only,
    as it is shared by every submission graded in this process."""
    path = trace_path(unit, case)
    if case.transform is None:
        return by_file(path, read_json)
    return by_file(path, lambda p: case.transform.apply(read_json(p)), case.transform)
