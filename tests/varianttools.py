"""Per-student variants in tests: one test secret and the units' variants, built once a process
(in the run's own variant cache, ``conftest.pytest_configure``)."""

from __future__ import annotations

import functools
from pathlib import Path

from grader.units import load_unit
from grader.variants import keys, store

SECRET = b"test-only-variant-secret-0123456789"


def write_secret(folder: Path) -> Path:
    path = Path(folder) / "variant.secret"
    path.write_bytes(SECRET + b"\n")
    return path


@functools.cache
def variant_of(unit_id: str, student: str = "s001") -> store.VariantUnit:
    """``student``'s variant of ``unit_id`` under the test secret."""
    return store.variant_unit(load_unit(unit_id), keys.variant_key(SECRET, student))


def variant08(student: str = "s001") -> store.VariantUnit:
    return variant_of("unit08", student)
