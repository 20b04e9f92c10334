"""Unit 09's lesson runs, all made at build time (each takes well under a second or two).

- ``buffer``: exercise 31.10 as ``ex31_10.py`` runs it (``figures()``), and the buffer level of
  its stream over time, rebuilt from the same run's token times with the engine's own
  ``streaming.level_at``;
- ``cancel_log``: what ``ex31_11.py`` prints (its event log and checks) and its exit status;
- ``prefix``: the reference policies on the lab's public traces with shared prefixes;
- ``tail``: ``ex31_13.py``'s ``exercise()`` with the reference ``measure.diagnose``.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import replace
from pathlib import Path

from servesim import DeviceProfile, simulate
from servesim.streaming import level_at

from grader import reference
from grader.sitebuild.claimkinds import pages_held
from grader.sitebuild.claims import BuildError
from grader.sitebuild.plugins import load_module
from grader.sitebuild.runs import device
from grader.units import Unit

code = load_module(Path(__file__).resolve().with_name("lesson_code.py"))

SAMPLE_MS = 250.0  # the buffer figure's sampling step
PREFIX_POLICIES = ("cancel_aware", "prefix_paged", "prefix_admit")
PREFIX_CASES = (  # (public trace, device file of the lab or None for unit.yaml's)
    ("shared-prefix", None),
    ("evict", "devices/pool-24.json"),
)


def _stream_times(ex, deadline_ms: float | None) -> tuple[list[float], float | None]:
    """Token times of ex31_10's stream and when it was cancelled (None if it completed)."""
    dev = replace(ex.DEVICE, stream_pause_deadline_ms=deadline_ms)
    seq = simulate(ex.load_trace(), ex.stream_aware, dev).sequences[0]
    cancelled = seq.status_ms if seq.cancel_reason else None
    return list(seq.token_times_ms), cancelled


def buffer_level(times: list[float], at_ms: float, event_bytes: int, rate: float) -> float:
    """Bytes in the buffer at ``at_ms``: each token adds an event, the client reads ``rate``."""
    level, last = 0.0, 0.0
    for t in times:
        if t > at_ms:
            break
        level, last = level_at(level, last, rate, t) + event_bytes, t
    return level_at(level, last, rate, at_ms)


def _curve(ex, times: list[float], until_ms: float, extra: list[float], rate: float) -> list[tuple]:
    size = ex.DEVICE.stream_event_bytes
    grid = [i * SAMPLE_MS for i in range(int(until_ms // SAMPLE_MS) + 1)]
    stamps = sorted({*grid, *(t for t in extra if t is not None and t <= until_ms), until_ms})
    return [(t, buffer_level(times, t, size, rate)) for t in stamps]


def buffer(unit: Unit) -> dict:
    """Exercise 31.10: ex31_10.py's figures and the level of both runs over time."""
    ex = code.lab_file(unit, "ex31_10")
    f = ex.figures()
    free_times, free_cancel = _stream_times(ex, None)
    stall_times, stall_cancel = _stream_times(ex, ex.DEADLINE_MS)
    free, stall = f["no_deadline"], f["with_deadline"]
    if free_cancel is not None or stall_cancel != stall["status_ms"]:
        raise BuildError("unit09 lesson: the buffer runs differ from ex31_10.py's figures")
    size, rate = ex.DEVICE.stream_event_bytes, f["read_bytes_per_s"]
    peak = max(buffer_level(free_times, t, size, rate) for t in free_times)
    pause, resume = free["pauses_ms"][0]
    return {
        **f,
        "event_bytes": size,
        "sample_ms": SAMPLE_MS,
        "step_ms": ex.STEP_MS,
        "output_tokens": free["output_tokens"],
        "peak_from_times": peak,
        "free_curve": _curve(ex, free_times, free["ack_ms"], [pause, resume], rate),
        "stall_curve": _curve(ex, stall_times, stall_cancel, [pause], rate),
    }


def cancel_log(unit: Unit) -> dict:
    """Exercise 31.11: what ex31_11.py prints, line by line, and its exit status."""
    ex = code.lab_file(unit, "ex31_11")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = ex.main([])
    lines = out.getvalue().splitlines()
    checks = [line.strip() for line in lines if line.strip().startswith("check:")]
    return {
        "status": status,
        "text": out.getvalue(),
        "events": sum(line.startswith("event:") for line in lines),
        "checks": len(checks),
        "held": sum(line.endswith(": holds") for line in checks),
        "releases": sum(line.lstrip().startswith("release ") for line in lines),
        "device": ex.DEVICE,
        "requests": {r.id: r for r in ex.TRACE.requests},
    }


def _prefix_row(run: dict) -> dict:
    chunks = [c for e in run["events"] for c in e["prefill"]]
    summary = run["summary"]
    peak_pages, peak_entries = pages_held(run["events"])
    return {
        "peak_pages": peak_pages,  # the most distinct pages held at once
        "peak_entries": peak_entries,  # the most page-table entries at once (shared: several)
        "hit_tokens": sum(c.get("cached", 0) for c in chunks),
        "prefilled": sum(c["tokens"] for c in chunks),
        "prompt_tokens": summary["promptTokens"],
        "ttft_p50": summary["ttftMs"]["p50"],
        "ttft_p99": summary["ttftMs"]["p99"],
        "all_done": summary["allDoneMs"],
        "requests": summary["requests"],
        "cancelled": summary["cancelled"],
        "recomputed": summary["recomputedTokens"],
    }


def _params(unit: Unit, policy: str) -> dict:
    """The policy's parameters at their unit.yaml defaults (what ``simulate.py`` uses)."""
    spec = next(p for p in unit.policies if p["name"] == policy)
    return {name: p["default"] for name, p in spec.get("params", {}).items()}


def prefix(unit: Unit) -> list[dict]:
    """The three reference policies on each public trace with shared prefixes."""
    cases = []
    for trace_name, device_file in PREFIX_CASES:
        dev = device(unit)
        if device_file:
            doc = json.loads((Path(unit.lab_dir) / device_file).read_text(encoding="utf-8"))
            dev = DeviceProfile.from_json(doc["device"], source=device_file)
        trace = reference.load_trace(unit, trace_name)
        rows = {}
        for policy in PREFIX_POLICIES:
            params = _params(unit, policy)
            rows[policy] = _prefix_row(reference.run_reference(unit, trace, policy, params, dev))
        cases.append(
            {
                "trace": trace_name,
                "description": trace.description,
                "device_file": device_file,
                "device": dev.to_json(),
                "params": _params(unit, PREFIX_POLICIES[0]),
                "rows": rows,
            }
        )
    return cases


def _gap(rows: list[dict]) -> float | None:
    times = sorted(r["arrivalMs"] for r in rows)
    return times[1] - times[0] if len(times) > 1 else None


def _load(tailruns, rows: list[dict]) -> dict:
    """What a situation's rows hold: short requests, long prompts, slow readers."""
    short = [r for r in rows if r["id"].startswith("r")]
    long = [r for r in rows if r["id"].startswith("long")]
    slow = [r for r in rows if r.get("readBytesPerS", tailruns.FAST_READ) < tailruns.FAST_READ]
    return {
        "requests": len(rows),
        "short": len(short),
        "short_gap_ms": _gap(short),
        "short_input": (min(r["inputTokens"] for r in short), max(r["inputTokens"] for r in short)),
        "long": len(long),
        "long_gap_ms": _gap(long),
        "long_input": long[0]["inputTokens"] if long else None,
        "slow": len(slow),
        "slow_read": tailruns.values()["slow clients"]["readBytesPerS"],
        "slow_output": slow[0]["outputTokens"] if slow else None,
    }


def tail(unit: Unit) -> dict:
    """Exercise 31.13: every situation, its diagnosis and the follow-ups, as ex31_13.py runs;
    with what each load holds, the baseline's own figures and the diagnosis thresholds."""
    ex = code.exercise_31_13(unit)
    tailruns, measure = ex.tailruns, ex.measure
    result = ex.exercise()
    result["situations"] = {s["name"]: s for s in result["situations"]}
    baseline = tailruns.baseline_run()
    result["baseline"] = ex.figures(baseline, baseline)
    result["loads"] = {name: _load(tailruns, rows()) for name, rows in tailruns.SITUATIONS.items()}
    result["streaming"] = tailruns.STREAMING
    result["budget"] = tailruns.BUDGET
    result["thresholds"] = {
        name: getattr(measure, name)
        for name in ("ITL_GROWTH", "BLOCKED_SHARE", "QUEUE_GROWTH", "TAIL_GROWTH", "MIN_REQUESTS")
    }
    return result
