"""What a release refuses to ship: a handout whose points table is stale, hidden material that
is not committed.

Each check returns the sentence to show (what is wrong and what to run), or None when all is
well. ``infralab release`` raises it as its one error unless told otherwise with a flag.
"""

from __future__ import annotations

import subprocess

from ..units import Unit
from . import points

STALE_FLAG = "--allow-stale-readme"
UNCOMMITTED_FLAG = "--allow-uncommitted"


def stale_handout(unit: Unit) -> str | None:
    """The student README's points and case table against unit.yaml's parts and cases."""
    readme = unit.lab_dir / "README.md"
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8")
    if points.handout_text(unit, text) == text:
        return None
    return (
        f"{unit.lab_dir.name}/README.md: the points table is not the one unit.yaml's parts and "
        f"cases give (a case or a part changed since the last sync); run: infralab starter sync "
        f"--unit {unit.id}, review and commit it, then release again (or pass {STALE_FLAG})"
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
