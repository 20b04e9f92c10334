"""``infralab trace mutants --variants N``: the mutant check on a sample of variants.

The sample's keys are drawn from fixed sample ids (``sample-000``, ...) under a fixed sample
secret: variants a student could equally get (a key is uniform whatever the id), the same on
every run, and no course secret needed. Each sample variant is made as a student's would be
(``store.variant_unit``: with ``variants.strict`` a draw that lets a mutant survive has already
been refused and redrawn, and the reason is printed here). Each line says how long the variant
took to be ready, in wall time and in CPU time (a loaded machine stretches the first, not
the second): with an empty cache (``$INFRALAB_VARIANT_CACHE``) that is the time to make its
traces, snapshots and golden files, the strict check included.
"""

from __future__ import annotations

import json
import resource
import statistics
import time

from ..traces.mutants import Mutant, MutantResult
from ..units import Unit, UnitError
from . import strict
from .keys import variant_key
from .store import MARKER, variant_unit, varies

SAMPLE_SECRET = b"infralab mutant sample variants"


def sample_key(n: int) -> str:
    return variant_key(SAMPLE_SECRET, f"sample-{n:03d}")


def check_sample(unit: Unit, mutants: list[Mutant], fixed: list[MutantResult], n: int) -> list:
    """Print one line per sample variant; the ``variant:mutant`` names that survive one."""
    if not varies(unit):
        raise UnitError(f"--variants: unit {unit.id} declares no variants (unit.yaml 'variants')")
    hints = {r.mutant.name: r.killed_by_hidden for r in fixed}
    lost, made, cpu = [], [], []
    for index in range(n):
        started, cpu_started = time.monotonic(), _cpu_s()
        variant = variant_unit(unit, sample_key(index))
        made.append(time.monotonic() - started)
        cpu.append(_cpu_s() - cpu_started)
        marker = json.loads((variant.variant_dir / MARKER).read_text(encoding="utf-8"))
        for refusal in marker.get("refused", ()):
            print(f"sample-{index:03d}: draw {refusal['draw']} refused: {refusal['reason']}")
        names = strict.survivors(variant, mutants, hints)
        verdict = f"SURVIVE: {', '.join(names)}" if names else "every mutant killed"
        ready = f"ready in {made[-1]:.1f} s ({cpu[-1]:.1f} s CPU)"
        print(f"sample-{index:03d} (variant {variant.variant_hash}, {ready}): {verdict}")
        lost += [f"sample-{index:03d}:{name}" for name in names]
    print(
        f"{n} sample variant(s), {len(lost)} surviving mutant(s); ready in median "
        f"{statistics.median(made):.1f} s, max {max(made):.1f} s of wall time, median "
        f"{statistics.median(cpu):.1f} s, max {max(cpu):.1f} s of CPU (made here, or read from "
        "the variant cache)"
    )
    return lost


def _cpu_s() -> float:
    """CPU seconds of this process and of its waited-for children (the golden workers)."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
