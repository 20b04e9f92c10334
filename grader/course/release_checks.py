"""What a release refuses to ship: a lab folder that ``starter sync`` would change (the
handout's points table among its files), hidden material that is not committed.

Each check returns the sentence to show (what is wrong and what to run), or None when all is
well. ``infralab release`` raises it as its one error unless told otherwise with a flag.
"""

from __future__ import annotations

import subprocess

from ..units import Unit
from . import starter

STALE_FLAG = "--allow-stale-starter"
STALE_FLAG_OLD = "--allow-stale-readme"  # its earlier name, still accepted
UNCOMMITTED_FLAG = "--allow-uncommitted"


def stale_starter(unit: Unit) -> str | None:
    """The lab folder's generated files (stubs, ``lab.json``, the public tests' snapshots, the
    handout's points and case table) against what ``starter sync`` makes of unit.yaml and the
    solutions now. Both releases ship that folder: the student zip as it is, the Gradescope
    bundle as the folder every submission is graded in."""
    stale = starter.stale_files(unit)
    if not stale:
        return None
    names = [path.relative_to(unit.lab_dir).as_posix() for path in stale]
    why = (
        " (the handout's points table is not the one unit.yaml's parts and cases give)"
        if unit.lab_dir / "README.md" in stale
        else ""
    )
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return (
        f"{unit.lab_dir.name}/: starter sync would change {', '.join(names[:3])}{more}{why}; "
        f"run: infralab starter sync --unit {unit.id}, review and commit it, then release "
        f"again (or pass {STALE_FLAG})"
    )


def hidden_paths(unit: Unit) -> list[str]:
    """The folders holding a unit's hidden material, relative to the course root: its traces
    (hidden cases, golden files) and its unit folder (unit.yaml, diagnoses, mutants)."""
    root = unit.course_root
    return [str(p.relative_to(root)) for p in (unit.traces_dir, unit.unit_dir) if p.exists()]


def uncommitted_hidden(unit: Unit) -> str | None:
    """Changes to the unit's hidden material that git has not committed (new files included).

    A course root that is not a git work tree cannot tell committed from not: that is refused
    as well, since the bundle could not name what it was built from.
    """
    paths = hidden_paths(unit)
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", *paths],
            cwd=unit.course_root,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        return (
            f"cannot ask git whether {', '.join(paths)} are committed (is the course folder a "
            f"git work tree?); commit the unit's hidden material in git, or pass "
            f"{UNCOMMITTED_FLAG}"
        )
    changed = [line[3:] for line in done.stdout.splitlines() if line.strip()]
    if not changed:
        return None
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return (
        f"uncommitted changes to hidden material: {', '.join(changed[:3])}{more}; commit them "
        f"(git add {' '.join(paths)} && git commit) so the bundle is what the repository "
        f"holds, then release again (or pass {UNCOMMITTED_FLAG})"
    )
