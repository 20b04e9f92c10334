#!/usr/bin/env python3
"""Benchmark: infra-lab and Vidur (0.0.9 and 0.0.26) side by side on one job, in one run.

The job (``peers/vidur/README.md`` in the shared folder next to this repository): the Azure
conversation trace (CC-BY 4.0, Azure/AzurePublicDataset; Patel et al., "Splitwise", ISCA 2024),
unit 08's ``budgeted`` policy with a 512-token budget and 128 active sequences, on the affine
A30/7B device (0.25 ms per step + 0.1 ms per prefill token + 20 ms + 0.05 ms per decoded
sequence). These whole processes run it, each ``--repeat`` times in rounds (medians printed):

- ``infralab fast``: the TA command, ``infralab simulate --unit unit08 --reference --policy
  budgeted --budget 512 --trace T --device-profile P --output RUN.json`` (it picks the fast path
  and, for a run this long, the default compact format);
- ``lab simulate.py``: the lab folder's ``simulate.py`` (standard library only) with the
  reference ``policies.py`` copied in, same flags (``--skip "lab simulate.py"`` leaves it out:
  it takes minutes and about 2 GiB);
- ``vidur 0.0.9`` and ``vidur 0.0.26``: the peer's ``run_vidur.py`` and ``run_vidur26.py``
  (their predictor replaced by the same affine device), each with its own interpreter.

``--busy N`` runs N CPU-bound processes (a bare Python loop each) beside every timed round:
the loaded measurement. The load average is printed before and after the rounds.
``--vidur-repeat N`` runs the Vidur rows in the first N rounds only (on a loaded machine a
round of both releases takes many minutes); the ratios round by round then cover those rounds.

Our commands run once untimed first, and the children may cache bytecode (the benchmark drops
``PYTHONDONTWRITEBYTECODE`` from their environment), as Python does by default: Vidur's package
was compiled when pip installed it, and our editable checkout is compiled by that first run, so
neither side pays for compiling its sources in the timed rounds. The job itself (inputs, Vidur's
flags, timing a child) is in ``vidur_job.py``.

For each: whole-process wall time, the simulation loop alone (ours measured in this process,
Vidur's from the JSON line its script prints), peak RSS of the child, and the ratio to each
Vidur. Then where our whole process's time goes (``cli_phases.py``, run once per round beside
the timed runs: interpreter start, imports, setup, loop, summary, output; wall and CPU), and
the loops at several trace sizes (first N requests) with the cost per token event (first tokens
plus decode slots), which should stay flat as the trace grows.

Vidur is not a dependency of this project: install each release in its own virtualenv, outside
the repo (``python -m venv V && V/bin/pip install vidur==0.0.9``, the same for 0.0.26 in
another), and pass those interpreters:

    python benchmarks/vs_vidur.py --vidur-python V9/bin/python --vidur26-python V26/bin/python \
        [--repeat 3] [--vidur-repeat 1] [--busy 1] [--skip "lab simulate.py"] [--sizes 1000]

``--vidur-dir`` (or ``VIDUR_PEER_DIR``) is the folder holding the peer scripts, by default
``../shared/peers/vidur`` next to the repository; ``--vidur-python`` and ``--vidur26-python``
may also come from ``VIDUR_PYTHON`` and ``VIDUR26_PYTHON``. Without a Vidur interpreter only our
side runs. Figures depend on the machine and its load: quote them with the machine they came
from and the load averages printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from vidur_job import (  # noqa: E402
    BUDGET,
    DEFAULT_CSV,
    DEFAULT_PEER,
    PROFILE,
    VIDUR_RELEASES,
    busy,
    lab_copy,
    load_average,
    run_child,
    timed_child,
    vidur_command,
    vidur_stats,
    write_inputs,
)
from vidur_report import phase_times, report, report_phases  # noqa: E402

FAST_REPEAT = 9  # the fast loop takes milliseconds on small traces: more runs steady the median


def vidur_pythons(args) -> dict[str, str]:
    """The Vidur releases to run and their interpreters."""
    chosen = {"0.0.9": args.vidur_python, "0.0.26": args.vidur26_python}
    return {release: python for release, python in chosen.items() if python}


def whole_processes(folder: Path, trace: Path, table: Path, profile: Path, args):
    """Every row's timed runs (wall, peak RSS, Vidur's stats) and our phases, per round."""
    flags = ["--policy", "budgeted", "--budget", str(BUDGET), "--trace", str(trace)]
    flags += ["--device-profile", str(profile)]
    infralab = ["simulate", "--unit", "unit08", "--reference"]
    commands = {
        "infralab fast": (
            [
                sys.executable,
                "-m",
                "grader.cli",
                *infralab,
                *flags,
                "--output",
                str(folder / "fast.json"),
            ],
            ROOT,
        ),
        "lab simulate.py": (
            [sys.executable, "simulate.py", *flags, "--output", str(folder / "lab.json")],
            lab_copy(folder) if "lab simulate.py" not in args.skip else folder,
        ),
    }
    for release, python in vidur_pythons(args).items():
        out = folder / f"vidur-{release}"
        command = vidur_command(release, python, Path(args.vidur_dir), table, out)
        commands[f"vidur {release}"] = (command, folder)
    phases = [sys.executable, str(ROOT / "benchmarks/cli_phases.py"), *infralab, *flags]
    phases += ["--output", str(folder / "phases.json")]
    results = {name: [] for name in commands if name not in args.skip}
    for name in results:  # warm-up: our bytecode caches (pip compiled Vidur's), the file cache
        if not name.startswith("vidur"):
            timed_child(*commands[name])
    spent = []
    print(f"before the rounds: {load_average()}; {args.busy} CPU-bound process(es) beside them")
    with busy(args.busy):
        for round_ in range(args.repeat):  # rounds: a change in machine load hits every row
            for name, runs in results.items():
                if name.startswith("vidur") and round_ >= args.vidur_repeat:
                    continue
                run = run_child(*commands[name])
                stats = vidur_stats(run.stderr) if name.startswith("vidur") else None
                runs.append((run.wall, run.rss_mib, stats, run))
                print(
                    f"  {name}: {run.wall:.2f} s, {run.rss_mib:.0f} MiB, CPU {run.user:.2f} "
                    f"user + {run.sys:.2f} sys",
                    flush=True,
                )
            if "infralab fast" in results:
                wall, _, stderr = timed_child(phases, ROOT)
                spent.append(phase_times(stderr, wall))
        print(f"after the rounds: {load_average()}")
    return results, spent


def check_exact(run_file: Path, doc: dict, vidurs: dict[str, dict]) -> bool:
    """The TA command's run against the lab engine (every token time and step end, ``==``)
    and each Vidur release's counts (steps, decode slots, prefill tokens); prints what it
    compared."""
    import servesim
    from servesim.compact import expand_run

    from grader import reference
    from grader.units import load_unit

    run = expand_run(json.loads(run_file.read_text(encoding="utf-8"))["runs"][0])
    trace = servesim.parse_trace(doc)
    device = servesim.DeviceProfile.from_json(PROFILE)
    policy = reference.solution_policies(load_unit("unit08")).budgeted
    lab = servesim.simulate(trace, lambda view: policy(view, BUDGET), device, budget=BUDGET)
    events = run["events"]
    same = [e["endMs"] for e in events] == [e.end_ms for e in lab.events] and all(
        req["tokenTimesMs"] == list(seq.token_times_ms)
        for req, seq in zip(run["requests"], lab.sequences, strict=True)
    )
    tokens = sum(len(req["tokenTimesMs"]) for req in run["requests"])
    verdict = "identical to" if same else "DIFFERENT from"
    print(f"exact: {tokens:,} token times and {len(events):,} step ends {verdict} the lab engine's")
    ours = {
        "batches": len(events),
        "decode_slots": sum(len(e["decode"]) for e in events),
        "prefill_tokens": sum(c["tokens"] for e in events for c in e["prefill"]),
    }
    last = max(t for req in run["requests"] for t in req["tokenTimesMs"][-1:])
    agree_all = True
    for name, vidur in vidurs.items():
        # Vidur books some final prompt tokens as decode slots: compare the steps and their tokens
        agree = ours["batches"] == vidur["batches"] and sum(ours.values()) - ours["batches"] == (
            vidur["decode_slots"] + vidur["prefill_tokens"]
        )
        agree_all = agree_all and agree
        print(
            f"vs {name}: steps {ours['batches']:,} / {vidur['batches']:,}, decode slots "
            f"{ours['decode_slots']:,} / {vidur['decode_slots']:,}, prefill tokens "
            f"{ours['prefill_tokens']:,} / {vidur['prefill_tokens']:,} "
            f"({'the same steps and tokens' if agree else 'DIFFERENT'}); "
            f"last token {last / 1000:.3f} s / {vidur['sim_end_s']:.3f} s"
        )
    return same and agree_all


def loops(doc: dict, repeat: int, lab: bool) -> dict:
    """Median loop seconds of the fast executor and (``lab``) the lab engine, and token events."""
    import servesim

    from grader import fastpath, reference
    from grader.units import load_unit

    trace = servesim.parse_trace(doc)
    device = servesim.DeviceProfile.from_json(PROFILE)
    events = sum(r.output_tokens for r in trace.requests)
    out = {"events": events}

    unit = load_unit("unit08")

    def fast_loop():  # what the TA command runs: executor, compact run entry, summary
        fastpath.reference_run(unit, "budgeted", {"budget": BUDGET}, trace, device, "compact", True)

    policy = reference.solution_policies(unit).budgeted

    def lab_loop():
        servesim.simulate(trace, lambda view: policy(view, BUDGET), device, budget=BUDGET)

    for name, loop in (("fast", fast_loop), ("lab", lab_loop)):
        if name == "lab" and not lab:
            continue
        times = []
        for _ in range(repeat if name == "lab" else max(repeat, FAST_REPEAT)):
            start = time.perf_counter()
            loop()
            times.append(time.perf_counter() - start)
        out[name] = statistics.median(times)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="Azure conversation CSV")
    parser.add_argument(
        "--vidur-python", default=os.environ.get("VIDUR_PYTHON"), help="Vidur 0.0.9's python"
    )
    parser.add_argument(
        "--vidur26-python", default=os.environ.get("VIDUR26_PYTHON"), help="Vidur 0.0.26's"
    )
    parser.add_argument("--vidur-dir", default=os.environ.get("VIDUR_PEER_DIR", DEFAULT_PEER))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--vidur-repeat",
        type=int,
        help="Vidur's rows in the first N rounds only (default: every round; a round of both "
        "releases takes minutes)",
    )
    parser.add_argument(
        "--busy", type=int, default=0, help="CPU-bound processes beside the timed rounds"
    )
    parser.add_argument("--requests", type=int, default=100_000, help="trace prefix (all)")
    parser.add_argument("--sizes", default="1000,5000,10000,19366", help="loop-scaling sizes")
    parser.add_argument(
        "--skip", action="append", default=[], help="skip a whole-process row (repeatable)"
    )
    parser.add_argument("--lab-sizes", action="store_true", help="lab engine in the scaling too")
    args = parser.parse_args()
    if args.vidur_repeat is None:
        args.vidur_repeat = args.repeat
    if not args.csv.is_file():
        print(f"error: trace CSV not found: {args.csv} (pass --csv)", file=sys.stderr)
        return 2
    for release in vidur_pythons(args):
        script = VIDUR_RELEASES[release][0]
        if not (Path(args.vidur_dir) / script).is_file():
            print(f"error: no {script} in {args.vidur_dir} (pass --vidur-dir)", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="vs-vidur-") as tmp:
        folder = Path(tmp)
        trace, table, profile, doc = write_inputs(folder, args.csv, args.requests)
        count, cpus = len(doc["requests"]), os.cpu_count()
        print(f"job: {count} requests, budgeted B={BUDGET}, K=128; {cpus} CPUs")
        results, spent = whole_processes(folder, trace, table, profile, args)
        report(results, loops(doc, args.repeat, lab="lab simulate.py" in results))
        report_phases(spent)
        vidurs = {
            name: next(r[2] for r in runs if r[2] is not None)
            for name, runs in results.items()
            if name.startswith("vidur") and any(r[2] is not None for r in runs)
        }
        print()
        exact = check_exact(folder / "fast.json", doc, vidurs)
        print(f"\n{'requests':>9}{'token events':>14}{'fast µs/event':>15}{'lab µs/event':>14}")
        for size in (int(s) for s in args.sizes.split(",")):
            part = {**doc, "requests": doc["requests"][:size]}
            loop = loops(part, args.repeat, lab=args.lab_sizes)
            lab = f"{loop['lab'] / loop['events'] * 1e6:14.3f}" if "lab" in loop else f"{'-':>14}"
            fast = loop["fast"] / loop["events"] * 1e6
            print(f"{len(part['requests']):9}{loop['events']:14}{fast:15.3f}{lab}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
