"""The parts of a unit's lab as the student meets them: ``parts`` of unit.yaml.

A part has the number the handout gives it, an English and a Chinese title, the functions of
the editable files it asks for (``"policies.py:static"``), a kind and an estimate of the hours
it takes::

    parts:
      - {id: batching, number: 1, title: "static and continuous batching",
         title_zh: "static 与 continuous", functions: ["policies.py:static"], hours: [1, 2]}
      - {id: fair, number: 4, kind: optional, ...}

``kind`` is ``core`` (default: the local tests are red until it is done), ``optional`` or
``challenge`` (their local tests skip, with a one-line reason, until the student starts them).
Every graded case names its part by id; the report, the points table of the handout and the
lesson page, and the Gradescope output all read parts from here, so their numbers agree.

A unit without ``parts`` gets one core part per case ``part``, numbered in order of appearance,
with the functions of the policies its cases run.
"""

from __future__ import annotations

from dataclasses import dataclass

from .units import Unit, UnitError

CORE, OPTIONAL, CHALLENGE = "core", "optional", "challenge"


@dataclass(frozen=True)
class Part:
    id: str
    number: int
    title: str
    title_zh: str
    functions: tuple[str, ...]  # "file.py:function"
    kind: str = CORE
    hours: tuple[float, float] | None = None

    @property
    def label(self) -> str:
        """How reports name the part: ``part 2 (budgets)``."""
        return f"part {self.number} ({self.id})"

    @property
    def skips_until_started(self) -> bool:
        return self.kind != CORE

    @property
    def function_names(self) -> tuple[str, ...]:
        return tuple(f.split(":", 1)[1] for f in self.functions)

    def to_lab_json(self) -> dict:
        """What the standard-library lab needs to know of the part (lab.json ``parts``)."""
        return {
            "id": self.id,
            "number": self.number,
            "title": self.title,
            "kind": self.kind,
            "functions": list(self.functions),
        }


def unit_parts(unit: Unit) -> tuple[Part, ...]:
    """The unit's parts in number order; ``UnitError`` when two share an id or a number."""
    if "parts" in unit.doc:
        parts = [
            Part(
                id=p["id"],
                number=p["number"],
                title=p["title"],
                title_zh=p["title_zh"],
                functions=tuple(p["functions"]),
                kind=p.get("kind", CORE),
                hours=tuple(p["hours"]),
            )
            for p in unit.doc["parts"]
        ]
    else:
        parts = _parts_from_cases(unit)
    where = f"labs/{unit.id}/unit.yaml: parts"
    for key in ("id", "number"):
        values = [getattr(p, key) for p in parts]
        twice = next((v for v in values if values.count(v) > 1), None)
        if twice is not None:
            raise UnitError(f"{where}: two parts have {key} {twice!r}")
    return tuple(sorted(parts, key=lambda p: p.number))


def _parts_from_cases(unit: Unit) -> list[Part]:
    functions: dict[str, dict[str, None]] = {}
    policies = {p["name"]: p for p in unit.policies}
    for case in unit.doc.get("grading", {}).get("cases", ()):
        policy = policies.get(case.get("policy"), {})
        names = [policy.get("function"), policy.get("admit")]
        part = functions.setdefault(case.get("part", case.get("policy")), {})
        part.update({f"policies.py:{name}": None for name in names if name})
    return [
        Part(part, number, part, part, tuple(names))
        for number, (part, names) in enumerate(functions.items(), start=1)
    ]


def part_by_id(unit: Unit) -> dict[str, Part]:
    return {p.id: p for p in unit_parts(unit)}
