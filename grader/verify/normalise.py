"""The one way a submitted run entry reaches the verdict: its size checked against its schema
and trace, then normalised to the full format.

    oversize(unit, document, trace_doc) -> Oversize | None     (a whole run file)
    normalise_run(unit, run, trace_doc) -> dict                (raises RunTooLarge)

Every bound comes from the unit's run schema (``verify.bounds``: fixed ones such as
``maxLength``, and ones relative to the case's trace such as ``x-maxItems: outputs``), so a run
file that declares more than any valid schedule of its trace needs, in any field, is refused
before anything is expanded, replayed or validated against the schema. ``normalise_run``
expands a compact entry (``servesim.compact``) only after that check; the verdict, the replay
and every score read its result and nothing else.
"""

from __future__ import annotations

from ..units import Unit
from .bounds import RECOMPUTE_ALLOWANCE, Oversize, TraceBounds, first_over
from .runschema import inlined_schema

__all__ = [
    "RECOMPUTE_ALLOWANCE",
    "Oversize",
    "RunTooLarge",
    "TraceBounds",
    "normalise_run",
    "oversize",
]


class RunTooLarge(ValueError):
    """The run entry declares more than its schema and trace allow (``oversize`` says what)."""


def oversize(unit: Unit, document, trace_doc: dict) -> Oversize | None:
    """The first field of a run file past its bound (None: all within bounds)."""
    return first_over(inlined_schema(unit), document, trace_doc)


def _runs_only(unit: Unit) -> dict:
    """The run schema's ``runs`` alone: one entry is checked as the file's only run."""
    return {"properties": {"runs": inlined_schema(unit)["properties"]["runs"]}}


def normalise_run(unit: Unit, run: dict, trace_doc: dict) -> dict:
    """The full run entry the verdict reads: ``run`` itself when full, its expansion when
    compact; raises ``RunTooLarge`` before expanding anything larger than its bounds allow."""
    from servesim.compact import expand_run

    found = first_over(_runs_only(unit), {"runs": [run]}, trace_doc)
    if found is not None:
        raise RunTooLarge(found.detail)
    return expand_run(run)
