"""Unit 07's lesson page: the reference runs behind every number, the figure, the explorer.

Site plug-in (see docs/units.md, section "Site"): ``infralab site build`` loads this file by
path and calls ``lesson_context(unit)``. Every run is made now by the unit's reference solution
on the device of unit.yaml; nothing is typed in. The explorer embeds one precomputed run per
(chunk, overhead) pair, so the page needs no simulator of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup
from servesim.htmlsafe import script_data

from grader import reference
from grader.sitebuild.claims import BuildError
from grader.sitebuild.runs import (
    PolicyRun,
    device,
    opening_steps,
    policy_run,
    trace_json,
    widest_gap,
)
from grader.sitebuild.svg import Lane, timeline_svg
from grader.units import Unit

EXPLORER_CHUNKS = range(1, 13)
EXPLORER_OVERHEADS = (0.0, 0.25, 0.5)
FIGURE_ID = "timeline-mixed"
METRICS = ("A.maxItlMs", "L.ttftMs", "S.ttftMs")


@dataclass
class LessonRuns:
    unit: Unit
    device: dict
    chunk: int
    trace: dict  # mixed
    unseen: dict
    mixed: dict[str, PolicyRun] = field(default_factory=dict)
    prefill_only: dict[str, PolicyRun] = field(default_factory=dict)
    prefill_only_no_overhead: dict[str, PolicyRun] = field(default_factory=dict)
    unseen_chunk: int = 4

    @property
    def policies(self) -> list[PolicyRun]:
        return [self.mixed["fcfs"], self.mixed["chunked"]]


def _default_chunk(unit: Unit) -> int:
    for spec in unit.policies:
        if spec["name"] == "chunked":
            return int(spec["params"]["chunk"]["default"])
    raise BuildError(f"unit {unit.id}: no 'chunked' policy in unit.yaml")


def _pair(unit: Unit, trace, dev, chunk: int) -> dict[str, PolicyRun]:
    return {
        "fcfs": policy_run(unit, trace, "fcfs", {}, dev, "fcfs"),
        "chunked": policy_run(unit, trace, "chunked", {"chunk": chunk}, dev, f"chunk={chunk}"),
    }


def make_runs(unit: Unit) -> LessonRuns:
    """Run every case the lesson talks about with the unit's device."""
    dev = device(unit)
    chunk = _default_chunk(unit)
    mixed = reference.load_trace(unit, "mixed")
    prefill_only = reference.load_trace(unit, "prefill-only")
    return LessonRuns(
        unit=unit,
        device=dev.to_json(),
        chunk=chunk,
        trace=trace_json(mixed),
        unseen=trace_json(reference.load_trace(unit, "unseen")),
        mixed=_pair(unit, mixed, dev, chunk),
        prefill_only=_pair(unit, prefill_only, dev, chunk),
        prefill_only_no_overhead=_pair(unit, prefill_only, device(unit, overhead_ms=0.0), chunk),
    )


def _num(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text or "0"


def figure(pair: dict[str, PolicyRun], overhead: float, element_id: str) -> tuple[str, str]:
    """(svg, description) of the two-lane timeline of one fcfs/chunked pair."""
    chunked = pair["chunked"]
    desc = (
        f"上：fcfs；下：{chunked.label}；每次提交开销 {_num(overhead)} ms。横轴为毫秒，两条时间线"
        "比例相同。绿色块是 decode batch，琥珀色块是 prefill（标注“请求×token 数”）；"
        "每条时间线上方的三角标出请求到达，下方竖线标出各请求的首 token，"
        "括线标出 A 最长的一段 token 间隔。"
    )
    lanes = [Lane(p.label, p, widest_gap(p, "A")) for p in (pair["fcfs"], chunked)]
    title = f"mixed 在 fcfs 与 {chunked.label} 下的提交时间线"
    return timeline_svg(lanes, title=title, desc=desc, element_id=element_id), desc


def _cells(pair: dict[str, PolicyRun], overhead: float) -> dict[str, str]:
    cells = {
        "chunked.label": pair["chunked"].label,
        "setting": f"{pair['chunked'].label}、开销 {_num(overhead)} ms",
    }
    for policy, run in pair.items():
        for metric in METRICS:
            rid, key = metric.split(".")
            cells[f"{policy}.{metric}"] = f"{run.req[rid][key]:.2f}"
        cells[f"{policy}.allDoneMs"] = f"{run.all_done:.2f}"
        cells[f"{policy}.submissions"] = str(run.summary["submissions"])
    return cells


def _verdict(pair: dict[str, PolicyRun], overhead: float) -> str:
    f, c = pair["fcfs"], pair["chunked"]
    parts = []
    for name, before, after in (
        ("A 最长间隔", f.req["A"]["maxItlMs"], c.req["A"]["maxItlMs"]),
        ("S 首 token", f.req["S"]["ttftMs"], c.req["S"]["ttftMs"]),
        ("全部完成", f.all_done, c.all_done),
    ):
        diff = after - before
        shorter, longer = ("缩短", "延长") if name == "A 最长间隔" else ("提前", "推迟")
        change = f"{shorter if diff < 0 else longer} {abs(diff):.2f} ms"
        word = "不变" if abs(diff) < 1e-9 else change
        parts.append(f"{name}{word}")
    return f"{c.label}、开销 {_num(overhead)} ms，与 fcfs 相比：" + "；".join(parts) + "。"


def _script_json(data: dict) -> str:
    """``htmlsafe.script_data``, with no "}}" that reads like template syntax."""
    text = script_data(data)
    while "}}" in text:
        text = text.replace("}}", "} }")
    return text


def variant_key(chunk: int, overhead: float) -> str:
    """The key explorer.js builds from the controls: name=value pairs sorted by name."""
    return f"chunk={chunk};overhead={_num(overhead)}"


def explorer(unit: Unit, default_chunk: int, default_overhead: float) -> dict:
    """Every (chunk, overhead) variant: its figure, table cells and one-line comparison.

    The unit's own defaults are always among the choices, so the page opens on one of them.
    """
    mixed = reference.load_trace(unit, "mixed")
    chunks = sorted({*EXPLORER_CHUNKS, default_chunk})
    overheads = sorted({*EXPLORER_OVERHEADS, default_overhead})
    variants = {}
    for overhead in overheads:
        dev = device(unit, overhead_ms=overhead)
        fcfs = policy_run(unit, mixed, "fcfs", {}, dev, "fcfs")
        for chunk in chunks:
            chunked = policy_run(unit, mixed, "chunked", {"chunk": chunk}, dev, f"chunk={chunk}")
            pair = {"fcfs": fcfs, "chunked": chunked}
            svg, _ = figure(pair, overhead, FIGURE_ID)
            variants[variant_key(chunk, overhead)] = {
                "svg": Markup(svg),
                "cells": _cells(pair, overhead),
                "note": _verdict(pair, overhead),
                "runs": pair,
            }
    data = {k: {"cells": v["cells"], "note": v["note"]} for k, v in variants.items()}
    return {
        "extreme": variants[variant_key(chunks[0], overheads[-1])]["note"],
        "chunks": chunks,
        "overheads": [_num(o) for o in overheads],
        "variants": variants,
        # A's TTFT under chunked at each chunk, at the default overhead (the text's claim)
        "a_ttft": {
            chunk: variants[variant_key(chunk, default_overhead)]["runs"]["chunked"].req["A"][
                "ttftMs"
            ]
            for chunk in chunks
        },
        "data_json": Markup(_script_json(data)),
    }


def lesson_context(unit: Unit) -> dict:
    runs = make_runs(unit)
    overhead = runs.device["overheadMs"]
    svg, desc = figure(runs.mixed, overhead, FIGURE_ID)
    explore = explorer(unit, runs.chunk, overhead)
    key = variant_key(runs.chunk, overhead)
    if explore["variants"][key]["runs"]["chunked"].run != runs.mixed["chunked"].run:
        raise BuildError(f"unit {unit.id}: explorer variant {key} differs from the lesson run")
    return {
        "runs": runs,
        "steps": opening_steps(runs.mixed["fcfs"]),
        "gap_fcfs": widest_gap(runs.mixed["fcfs"], "A"),
        "gap_chunked": widest_gap(runs.mixed["chunked"], "A"),
        "timeline_svg": Markup(svg),
        "timeline_desc": desc,
        "explorer": explore,
        "default_key": key,
        "default_cells": _cells(runs.mixed, overhead),
    }
