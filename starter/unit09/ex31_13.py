#!/usr/bin/env python3
"""Exercise 31.13 on this lab's engine (given; not graded): the tail grows while memory is free.

    python3 exercises.py 31.13 [--json]

Each situation of ``tailruns.py`` (light load, overload, long prompts among decoding streams,
slow clients, with this lab's numbers from ``tailruns.json``) runs on the engine;
``diagnose()`` from your measure.py names its cause against the light-load baseline, and the
figures behind it are printed with their denominators. Then the action the diagnosis implies
runs on the engine too: for overload, admission control (a queue cap, what to do until added
capacity is warm) and then the capacity itself (more slots); for long prompts, chunked prefill
(smaller token budgets); for slow clients, a shorter pause deadline, which cancels stalled
streams and frees their slots. The slow-client situation needs an engine with streaming output
and is skipped without one. A ``tailruns.json`` that cannot be read or lacks a number is one
error line (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure
import tailruns
from servesim.stubs import run_main

# what the diagnosis implies, tried on the engine: (label, engine_run settings)
FOLLOW_UPS = {
    "overload": [
        ("admission control: queue cap 4, until capacity is warm", {"queue_cap": 4}),
        ("capacity added: K = 16 slots", {"maxActive": 16}),
        ("capacity added: K = 48 slots", {"maxActive": 48}),
    ],
    "long prompts": [
        ("chunked prefill: budget 512 tokens a step", {"budget": 512}),
        ("chunked prefill: budget 256 tokens a step", {"budget": 256}),
    ],
    "slow clients": [
        ("pause deadline 0.5 s: stalled streams are cancelled", {"streamPauseDeadlineMs": 500.0}),
    ],
}


def figures(run: dict, baseline: dict) -> dict:
    """The diagnosis of ``run`` against ``baseline`` and the numbers behind it."""
    got = measure.diagnose(run, baseline)
    ev = got.evidence
    out = {
        "cause": got.cause.value,
        "also": [c.value for c in got.also],
        "action": got.action,
        "why": got.why,
        "served": ev.served,
        "p99TtftMs": ev.p99_ttft_ms,
        "p99WaitMs": ev.p99_wait_ms,
        "p99ItlMs": ev.p99_itl_ms,
        "decodeOnlyMedianItlMs": ev.decode_only_median_itl_ms,
        "queueHalves": [ev.queue_first_half, ev.queue_second_half],
    }
    for name in ("waiting", "rejected", "long_gaps_in_prefill", "amplification"):
        out[name] = _ratio(getattr(ev, name))
    if ev.slow is not None:
        out["paused"] = _ratio(ev.slow.paused)
        out["stalled"] = _ratio(ev.slow.stalled)
    return out


def _ratio(ratio) -> dict:
    return {"num": ratio.num, "den": ratio.den, "value": ratio.value, "what": ratio.what}


def exercise() -> dict:
    """Every situation, its diagnosis and the follow-ups its action suggests."""
    baseline = tailruns.baseline_run()
    situations = []
    for name, rows in tailruns.SITUATIONS.items():
        if name == "slow clients" and not tailruns.engine_streams():
            situations.append({"name": name, "skipped": "this engine has no streaming output"})
            continue
        entry = {"name": name, **figures(tailruns.engine_run(rows()), baseline), "after": []}
        for label, settings in FOLLOW_UPS.get(name, []):
            after = figures(tailruns.engine_run(rows(), **settings), baseline)
            entry["after"].append({"label": label, **after})
        situations.append(entry)
    return {"exercise": "31.13", "device": tailruns.DEVICE, "situations": situations}


def _ms(value) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _share(r: dict) -> str:
    value = "-" if r["value"] is None else f"{r['value']:.2f}"
    return f"{value} ({r['num']:g} / {r['den']:g}: {r['what']})"


def _lines(f: dict, indent: str) -> list[str]:
    also = f" (also: {', '.join(f['also'])})" if f["also"] else ""
    lines = [f"{indent}diagnosis: {f['cause']}{also}"]
    if f["why"]:
        lines.append(f"{indent}because: {f['why']}")
    lines += [
        f"{indent}p99 TTFT {_ms(f['p99TtftMs'])}, p99 wait for a first step "
        f"{_ms(f['p99WaitMs'])} (over {f['served']} requests with a first token), "
        f"p99 ITL {_ms(f['p99ItlMs'])} (every gap; decode-only median "
        f"{_ms(f['decodeOnlyMedianItlMs'])})",
        f"{indent}mean queue, first / second half of the arrivals: "
        f"{f['queueHalves'][0]:.1f} / {f['queueHalves'][1]:.1f} requests",
        f"{indent}waiting share {_share(f['waiting'])}",
        f"{indent}rejected {_share(f['rejected'])}",
        f"{indent}long gaps in prefill steps {_share(f['long_gaps_in_prefill'])}",
        f"{indent}amplification {_share(f['amplification'])}",
    ]
    if "paused" in f:
        lines.append(f"{indent}paused {_share(f['paused'])}; stalled {_share(f['stalled'])}")
    return lines


def render(result: dict) -> str:
    d = result["device"]
    lines = [
        "exercise 31.13: the tail grows while memory is free",
        f"  device: K = {d['maxActive']} slots, {d['kvPages']} KV pages (never short), "
        f"decode step {d['decodeBatchMs']:g} ms + {d['decodeMsPerSeq']:g} ms a sequence, "
        f"prefill {d['prefillMsPerToken']:g} ms a token; baseline: the light load drawn again",
    ]
    for s in result["situations"]:
        lines.append(f"\n{s['name']}:")
        if "skipped" in s:
            lines.append(f"  skipped: {s['skipped']}")
            continue
        lines += _lines(s, "  ")
        lines.append(f"  action: {s['action']}")
        for after in s["after"]:
            lines.append(f"  then, {after['label']}:")
            lines += _lines(after, "    ")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exercises.py 31.13", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = exercise()
    except tailruns.ValuesError as exc:
        print(f"exercises.py 31.13: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


def main(argv=None) -> int:
    """Run the exercise; a stub of measure.py still to write is one line on stderr."""
    return run_main("exercises.py 31.13", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
