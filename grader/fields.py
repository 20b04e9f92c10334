"""Field checks for the mappings staff write by hand (unit.yaml cases, trace specs)."""

from __future__ import annotations

from collections.abc import Iterable


def check_fields(
    doc: dict,
    where: str,
    known: Iterable[str],
    required: Iterable[str] = (),
    error: type[Exception] = ValueError,
) -> None:
    """Raise ``error`` naming ``where`` for the first unknown or missing field of ``doc``."""
    unknown = sorted(set(doc) - set(known))
    if unknown:
        raise error(f"{where}: unknown field(s) {', '.join(unknown)}")
    for key in required:
        if key not in doc:
            raise error(f"{where}: field '{key}' is missing")
