"""Golden results: the reference solution's run for every graded case.

``traces/<unit>/golden/<case>.json`` holds the reference run entry together with what it was
made from (the case as written in unit.yaml, the trace file's sha256, the engine version), so
``infralab golden --check`` can tell a stale file from a good one without trusting dates.
Golden files are written only by ``infralab golden`` (``write_golden`` here), which also writes
the unit's label key once (``grader.course.labels``: stable names of hidden cases).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import servesim

from .. import reference
from ..cases import Case, Kind, case_trace_doc, load_grading, sha256_file, trace_path
from ..jsonio import by_file, write_text_atomic
from ..units import Unit, UnitError
from . import labels


class GoldenState(Enum):
    OK = "ok"
    MISSING = "missing"
    STALE = "stale"
    ORPHAN = "orphan"  # a golden file no case uses


@dataclass(frozen=True)
class GoldenStatus:
    path: Path
    state: GoldenState
    reason: str = ""


def golden_dir(unit: Unit) -> Path:
    return unit.traces_dir / "golden"


def golden_path(unit: Unit, case: Case) -> Path:
    return golden_dir(unit) / f"{case.id}.json"


def case_device(unit: Unit, case: Case):
    """The device profile a case runs on: the unit's, with the case's overrides."""
    overrides = {"overhead_ms": case.overhead_ms} if case.overhead_ms is not None else {}
    names = {
        "maxActive": "max_active",
        "kvPages": "kv_pages",
        "prefillMsPerContextToken": "prefill_ms_per_context_token",
        "decodeMsPerContextToken": "decode_ms_per_context_token",
        "prefillMsPerToken": "prefill_ms_per_token",
        "decodeBatchMs": "decode_batch_ms",
        "decodeMsPerSeq": "decode_ms_per_seq",
        "streamBufferBytes": "stream_buffer_bytes",
        "streamEventBytes": "stream_event_bytes",
        "streamLowMarkBytes": "stream_low_mark_bytes",
        "streamPauseDeadlineMs": "stream_pause_deadline_ms",
    }
    overrides.update({names[key]: value for key, value in case.device.items()})
    return reference.device_profile(unit, **overrides)


def case_device_json(unit: Unit, case: Case) -> dict:
    """``case_device(unit, case).to_json()``, computed once per device (every case of a unit
    but a few shares one, and the grader asks for it twice per case judged)."""
    key = (repr(unit.device), case.overhead_ms, repr(case.device))
    if key not in _DEVICE_JSON:
        _DEVICE_JSON[key] = case_device(unit, case).to_json()
    return dict(_DEVICE_JSON[key])


_DEVICE_JSON: dict[tuple, dict] = {}


def case_limits(unit: Unit, case: Case) -> dict | None:
    """The engine limits a case runs under (extended run files): the token budget B (the
    policy's ``budget`` parameter, if it has one) and the queue cap; None for units whose run
    files state no limits (unit 07). The replay enforces these, whatever a run file states."""
    if unit.doc.get("run_file") != "extended":
        return None
    return {"budget": case.params.get("budget"), "queueCap": case.queue_cap}


def _rel(unit: Unit, path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(unit.course_root).as_posix()
    except ValueError:
        return Path(path).name


def _trace_label(unit: Unit, source: Path) -> str:
    """Where the trace lives, repo-relative and the same wherever the checkout is."""
    if Path(source).parent == unit.traces_dir / "hidden":
        return f"traces/{unit.id}/hidden/{Path(source).name}"
    return f"{unit.doc['lab_folder']}/traces/{Path(source).name}"


def build_golden(unit: Unit, case: Case, runs: dict | None = None) -> dict:
    """The golden document of ``case``, computed now with the reference solution. ``runs``
    (optional) remembers reference runs by what makes them (``_run_key``): cases that differ
    only in what they ask of the same run share it."""
    source = trace_path(unit, case)
    device = case_device(unit, case)
    key = _run_key(case)
    run = None if runs is None else runs.get(key)
    if run is None:
        trace = servesim.parse_trace(case_trace_doc(unit, case), source=case.trace)
        run = reference.run_reference(
            unit, trace, case.policy, case.params, device, queue_cap=case.queue_cap
        )
        if runs is not None:
            runs[key] = run
    doc = {
        "generatedBy": f"infralab golden --unit {unit.id}",
        "engineVersion": servesim.ENGINE_VERSION,
        "case": case.spec,
        "trace": {
            "name": case.trace,
            "file": _trace_label(unit, source),
            "sha256": sha256_file(source),
        },
        "device": device.to_json(),
        "run": run,
    }
    if case.kind is Kind.SCRIPT:
        doc["answer"] = reference_answer(unit, case, run)
    return doc


def _run_key(case: Case) -> str:
    """What a reference run depends on: the case's setup and its trace transform."""
    return repr((case.setup_key, case.transform))


def build_all(unit: Unit, cases: list[Case]) -> list[dict]:
    """``build_golden`` of every case, in order. Cases that share a reference run share it,
    and with more than one core the groups of such cases are built in parallel processes
    (forked: each starts with the engine and the solution already imported)."""
    groups: dict[str, list[int]] = {}
    for index, case in enumerate(cases):
        groups.setdefault(_run_key(case), []).append(index)
    workers = min(os.cpu_count() or 1, len(groups), _MAX_WORKERS)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        runs: dict = {}
        return [build_golden(unit, case, runs) for case in cases]
    shares = [[] for _ in range(workers)]
    for n, members in enumerate(sorted(groups.values(), key=len, reverse=True)):
        shares[n % workers].extend(members)
    # the workers inherit the unit and its cases by the fork: only case indices and the built
    # documents cross a pipe, so a Unit needs no pickling (a test's subclass of one cannot)
    _FORKED.update(unit=unit, cases=cases)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            built = dict(pair for share in pool.map(_build_share, shares) for pair in share)
    finally:
        _FORKED.clear()
    return [built[index] for index in range(len(cases))]


_MAX_WORKERS = 8
_FORKED: dict = {}  # what build_all hands its forked workers


def _build_share(indices: list[int]) -> list[tuple[int, dict]]:
    unit, cases, runs = _FORKED["unit"], _FORKED["cases"], {}
    return [(index, build_golden(unit, cases[index], runs)) for index in indices]


def reference_answer(unit: Unit, case: Case, run: dict) -> dict:
    """A script case's answers from the solution's editable files (trusted, in-process)."""
    from ..grading.inprocess import run_in_process

    files = {name: (unit.solutions_dir / name).read_bytes() for name in unit.editable}
    with tempfile.TemporaryDirectory(prefix="infralab-golden-") as tmp:
        path = Path(tmp) / "check.json"
        path.write_text(json.dumps({"run": run, "args": case.args}), encoding="utf-8")
        child = run_in_process(unit.lab_dir, files, path, [], script=case.script)
    if child.returncode != 0 or child.output is None:
        raise UnitError(f"case '{case.id}': the reference's {case.script} failed: {child.stderr}")
    return json.loads(child.output)


def _text(doc: dict) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _tokens(doc: dict) -> str:
    """``doc`` without the layout: equal exactly when ``_text`` is (the same keys in the same
    order, the same numbers and strings), and made by json's C encoder, several times faster
    than the indented text, which only a file being written needs."""
    return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def check_golden(unit: Unit) -> list[GoldenStatus]:
    """The state of every case's golden file, plus orphans; writes nothing."""
    grading = load_grading(unit)
    statuses = []
    present = [case for case in grading.cases if golden_path(unit, case).is_file()]
    expected = dict(zip((c.id for c in present), build_all(unit, present), strict=True))
    for case in grading.cases:
        path = golden_path(unit, case)
        if case.id not in expected:
            statuses.append(GoldenStatus(path, GoldenState.MISSING, "no golden file"))
            continue
        statuses.append(GoldenStatus(path, *_freshness(path, expected[case.id])))
    wanted = {golden_path(unit, c) for c in grading.cases}
    for path in sorted(golden_dir(unit).glob("*.json")):
        if path not in wanted:
            statuses.append(GoldenStatus(path, GoldenState.ORPHAN, "no case uses it"))
    if any(c.hidden for c in grading.cases) and not labels.key_path(unit).is_file():
        statuses.append(GoldenStatus(labels.key_path(unit), GoldenState.MISSING, "no label key"))
    return statuses


def _freshness(path: Path, expected: dict) -> tuple[GoldenState, str]:
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return GoldenState.STALE, f"unreadable ({exc})"
    if current.get("trace", {}).get("sha256") != expected["trace"]["sha256"]:
        return GoldenState.STALE, "the trace changed (sha256 differs)"
    if current.get("engineVersion") != expected["engineVersion"]:
        return GoldenState.STALE, "made by another engine version"
    if current.get("case") != expected["case"]:
        return GoldenState.STALE, "the case changed in unit.yaml"
    if _tokens(current) != _tokens(expected):
        return GoldenState.STALE, "the reference result changed"
    return GoldenState.OK, ""


def write_golden(unit: Unit, given: dict[str, str] | None = None) -> list[Path]:
    """Rewrite each missing or differing golden file (``given``: id -> text known); drop orphans."""
    given, cases = given or {}, list(load_grading(unit).cases)
    todo = [c for c in cases if c.id not in given]
    built = dict(zip((c.id for c in todo), map(_text, build_all(unit, todo)), strict=True))
    docs = {golden_path(unit, c): given.get(c.id) or built[c.id] for c in cases}
    changed = []
    for path, text in docs.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text)
            changed.append(path)
    for path in sorted(golden_dir(unit).glob("*.json")):
        if path not in docs:
            path.unlink()
            changed.append(path)
    if any(c.hidden for c in cases):
        changed += [p for p in [labels.write_key(unit)] if p is not None]
    return changed


def load_golden(unit: Unit, case: Case) -> dict:
    """A case's golden document; raises ``UnitError`` when it is missing or out of date.

    Only the cheap checks run here (trace sha256, engine version, case spec); the full
    regeneration belongs to ``infralab golden --check``.
    """
    path = golden_path(unit, case)
    hint = f"run: infralab golden --unit {unit.id}"
    if not path.is_file():
        raise UnitError(f"golden file for case '{case.id}' is missing ({hint})")
    try:
        doc = by_file(path, _read_golden)  # shared by every submission: read-only
    except (OSError, ValueError) as exc:
        raise UnitError(f"{_rel(path)}: unreadable golden file ({exc})") from None
    if doc.get("trace", {}).get("sha256") != sha256_file(trace_path(unit, case)):
        raise UnitError(f"golden file for case '{case.id}' is stale: its trace changed ({hint})")
    if doc.get("engineVersion") != servesim.ENGINE_VERSION or doc.get("case") != case.spec:
        raise UnitError(f"golden file for case '{case.id}' is stale ({hint})")
    return doc


_BY_CONTENT: dict[str, dict] = {}  # sha256 of a golden file's bytes -> its expanded document


def _read_golden(path: Path) -> dict:
    """A golden file's document with its run expanded, parsed once per content: a variant's
    golden files of cases on traces no variant redraws are the fixed set's, byte for byte."""
    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest not in _BY_CONTENT:
        if len(_BY_CONTENT) >= 512:  # bounded: the memo starts again
            _BY_CONTENT.clear()
        doc = json.loads(data)
        if isinstance(doc.get("run"), dict):  # its run in the full format
            from servesim.compact import expand_run

            doc = {**doc, "run": expand_run(doc["run"])}
        _BY_CONTENT[digest] = doc
    return _BY_CONTENT[digest]
