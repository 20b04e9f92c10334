"""Unit 08's lesson runs: the catalogue of every run the page talks about, and the command that
refreshes the cached ones.

Each run is made by the reference solution. The files, loaded by path (docs/units.md, "Site"):

- ``lesson_constructions.py``: constructions, made at every build (static vs continuous,
  budgeted vs paged on ``burst`` and its other draws, the LIFO victim, the time budget against
  the token budget, section 31.7's worked example);
- ``lesson_protocol_runs.py``: protocol runs as the page reads them (the tier sweep, the short
  single-seed sweep, closed vs open loop, the length buckets), from the cache;
- ``lesson_jobs.py``: the settings of the protocol runs, the code they run with (the lab's own
  ``experiment.py`` and the reference solution, exactly what a student's ``sweep.py
  --protocol`` runs) and the job each worker runs;
- ``lesson_cache.py``: ``lesson_cache.json``, each protocol run's results under a key hashed
  from every input;
- ``lesson_events.py``: what the narratives read from a run's events.

``python labs/unit08/lesson_runs.py`` makes the stale cached sections again (``--all``: every
one) and writes them back; CI builds the site from a fresh clone, where the committed cache is
what it uses.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.plugins import load_file
from grader.units import CODE_ROOT

cache = load_file(Path(__file__).resolve().with_name("lesson_cache.py"))


def main(argv=None) -> int:
    from grader.units import load_unit

    unit = load_unit("unit08")
    only = None if "--all" in (argv or sys.argv[1:]) else cache.stale_sections(unit)
    if not only and only is not None:
        print(f"{cache.CACHE.relative_to(CODE_ROOT)} is up to date")
        return 0
    made = cache.refresh(unit, only)
    print(f"wrote {cache.CACHE.relative_to(CODE_ROOT)}: {', '.join(made)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
