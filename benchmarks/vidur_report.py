"""What ``vs_vidur.py`` prints from its runs: the whole processes side by side (wall, loop, peak
RSS, the ratio to each Vidur release, round by round), what the kernel counted for each, and
where our process's time went (``cli_phases.py``).

``results`` maps a row's name to its runs, one per round: ``(wall, peak RSS MiB, Vidur's
stats or None, vidur_job.ChildRun)``.
"""

from __future__ import annotations

import json
import statistics


def phase_times(stderr: str, wall: float) -> dict:
    """``cli_phases.py``'s phases (wall, CPU); the interpreter's start-up and exit take the
    process's wall time that the phases inside it do not account for."""
    line = next(x for x in reversed(stderr.splitlines()) if x.startswith('{"phases"'))
    found = json.loads(line)
    phases = found["phases"]
    phases["start"][0] = wall - found["in_process"][0]
    return phases


def report(results: dict, loop: dict) -> None:
    bases = {
        name.split()[1]: statistics.median(r[0] for r in runs)
        for name, runs in results.items()
        if name.startswith("vidur")
    }
    ratios = "".join(f"{'vs ' + release:>11}" for release in bases)
    print(f"\n{'':18}{'whole process':>15}{'loop':>10}{'peak RSS':>11}{ratios}")
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        rss = statistics.median(r[1] for r in runs)
        if name.startswith("vidur"):
            inner = statistics.median(r[2]["loop_s"] for r in runs if r[2] is not None)
        else:
            inner = loop.get("fast" if name == "infralab fast" else "lab")
        inner_text = f"{inner:9.2f}s" if inner is not None else "        -"
        ratio = "".join(f"{base / wall:10.1f}x" for base in bases.values())
        print(f"{name:18}{wall:14.2f}s{inner_text}{rss:7.0f} MiB{ratio}")
    print(
        "(medians; loop: ours = the executor plus the compact run and summary (fast) or "
        "servesim.simulate (lab), measured in this process; Vidur's from its script)"
    )
    ours = [r[0] for r in results.get("infralab fast", ())]
    for name, runs in results.items():
        if name.startswith("vidur") and ours:
            each = [v[0] / o for v, o in zip(runs, ours)]
            listed = ", ".join(f"{x:.1f}x" for x in each)
            print(
                f"infralab fast vs {name}, round by round: {listed} (lowest {min(each):.1f}x); "
                f"Vidur's median over our slowest run: {bases[name.split()[1]] / max(ours):.1f}x"
            )
    print(f"\n{'':18}{'user':>8}{'sys':>8}{'CPU/wall':>10}{'minor faults':>14}{'vol/invol cs':>16}")
    for name, runs in results.items():
        usage = [r[3] for r in runs]

        def median(field: str, usage=usage) -> float:
            return statistics.median(getattr(u, field) for u in usage)

        cpu = statistics.median((u.user + u.sys) / u.wall for u in usage)
        switches = f"{median('voluntary'):.0f}/{median('involuntary'):.0f}"
        print(
            f"{name:18}{median('user'):7.2f}s{median('sys'):7.2f}s{cpu:10.2f}"
            f"{median('minor_faults'):14.0f}{switches:>16}"
        )
    print("(medians of what the kernel counted for each whole process)")


def report_phases(spent: list[dict]) -> None:
    """Medians of where our whole process's time went (``cli_phases.py``)."""
    if not spent:
        return
    names = {
        "start": "interpreter start + exit",
        "import": "imports",
        "setup": "setup (flags, unit, trace)",
        "loop": "loop (executor)",
        "summary": "compact run + summary",
        "run_other": "rest of the fast run",
        "output": "output (table, file)",
    }
    print(f"\n{'infralab fast, phase':30}{'wall':>9}{'CPU':>9}")
    for key, label in names.items():
        wall = statistics.median(s[key][0] for s in spent)
        cpu = statistics.median(s[key][1] for s in spent)
        print(f"{label:30}{wall:8.3f}s{cpu:8.3f}s")
    print("(medians of cli_phases.py runs, one per round beside the timed runs)")
