"""The lesson's cheapest-tier search again, with step costs fitted on a real device.

``PROFILE`` is a device profile the unit's runner fitted from measured steps of the tiny model
on CPU (``COMMAND`` wrote it, with its report next to it; ``tests/runner/test_shipped_profile.py``
checks that its coefficients follow from the steps it recorded). The tiers describe devices by
their step costs; here the fitted profile takes the place of ``BASE_TIER``'s costs, and every
tier keeps its speed relative to that tier: each fitted term is multiplied by the tier's own
term over the base tier's (``SCALE_BY``; a context term follows its phase's per-token or
per-sequence term, which the tiers set). Capacity, price, quality and policy stay the tier's.
Then the lesson's protocol runs every fitted tier exactly as the sweep runs the written ones.

The runs take minutes, so they live in ``lesson_cache.json`` like the other protocol sections
(``section`` gives ``lesson_cache.sections`` the inputs and the maker; the profile file is one
of the inputs, so a new calibration makes the cache stale).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from servesim.protocol import load_protocol
from servesim.tiers import TierError, parse_tier

from grader.sitebuild.claims import BuildError

PROFILE = "devices/cpu-tiny.json"
COMMAND = (
    "infralab run-gpu --unit unit08 --reference --calibrate --grid cpu "
    "--output starter/unit08/devices/cpu-tiny.json --report starter/unit08/devices/cpu-tiny.txt"
)
BASE_TIER = "small-paged"
# each fitted cost term -> the tier term whose ratio to the base tier's scales it
SCALE_BY = {
    "overheadMs": "overheadMs",
    "prefillMsPerToken": "prefillMsPerToken",
    "prefillMsPerContextToken": "prefillMsPerToken",
    "decodeBatchMs": "decodeBatchMs",
    "decodeMsPerSeq": "decodeMsPerSeq",
    "decodeMsPerContextToken": "decodeMsPerSeq",
}


def profile_document(lab_dir: Path) -> dict:
    path = Path(lab_dir) / PROFILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildError(f"{PROFILE}: cannot read the fitted profile ({exc})") from None


def fitted_tier_docs(tier_docs: list[dict], fitted: dict) -> list[dict]:
    """``tier_docs`` with their step costs replaced by ``fitted``'s, scaled by each tier's
    speed relative to ``BASE_TIER`` (see the module docstring)."""
    base = next((d["device"] for d in tier_docs if d["name"] == BASE_TIER), None)
    if base is None:
        raise BuildError(f"no tier named {BASE_TIER!r} to scale the fitted profile from")
    out = []
    for doc in tier_docs:
        device = dict(doc["device"])
        for term, by in SCALE_BY.items():
            if not base.get(by):
                raise BuildError(f"tier {BASE_TIER}: {by} must be above 0 to scale {term}")
            device[term] = fitted.get(term, 0.0) * doc["device"].get(by, 0.0) / base[by]
        out.append({**doc, "device": device})
    return out


def _tier_docs(paths) -> list[dict]:
    return [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]


def section(unit, cache, jobs, sweep_files: list[str]):
    """``lesson_cache.sections``' entry (``cache`` is that module, ``jobs`` is
    ``lesson_jobs``): the input files, and the function that runs the lesson's protocol over
    the fitted tiers."""
    files = cache._inputs(unit, [*sweep_files, PROFILE], (fitted_tier_docs, SCALE_BY, BASE_TIER))

    def make():
        protocol = load_protocol(unit.lab_dir / jobs.PROTOCOL)
        fitted = profile_document(unit.lab_dir)["device"]
        docs = fitted_tier_docs(_tier_docs(jobs.tier_paths(unit)), fitted)
        with tempfile.TemporaryDirectory(prefix="infralab-fitted-tiers-") as tmp:
            paths = []
            for doc in docs:
                path = Path(tmp) / f"{doc['name']}.json"
                path.write_text(json.dumps(doc), encoding="utf-8")
                paths.append(str(path))
            ex = jobs.experiment(unit)
            return ex.run_protocol(
                protocol, paths, jobs.code(unit), jobs.workers(), cache._progress
            )

    return files, make


def calibrated(unit, cache, jobs, sweep_result: dict) -> dict:
    """The search under the fitted profile beside the written one: the profile, its held-out
    error, each tier's operating point and the cheapest-tier choice under both."""
    protocol = sweep_result["protocol"]
    doc = profile_document(unit.lab_dir)
    names = tuple(p["name"] for p in unit.policies)
    fitted_docs = fitted_tier_docs(_tier_docs(jobs.tier_paths(unit)), doc["device"])
    try:
        tiers = [parse_tier(d, f"fitted tier {d['name']}", names) for d in fitted_docs]
    except TierError as exc:
        raise BuildError(str(exc)) from None
    ex, measure = jobs.experiment(unit), jobs.solution_measure(unit)
    cells = ex.judge(protocol, cache.cached(unit, "calibrated"), measure)
    points = ex.operating_points(tiers, cells)
    held = doc["calibration"]["summary"]["heldOut"]
    return {
        "file": PROFILE,
        "command": COMMAND,
        "base": BASE_TIER,
        "fitted": {term: doc["device"].get(term, 0.0) for term in SCALE_BY},
        "written": next(t.device.to_json() for t in sweep_result["tiers"] if t.name == BASE_TIER),
        "held_out": held["context"],
        "held_out_affine": held["affine"],
        "points": points,
        "choice": ex.cheapest(tiers, cells, points),
        "before": sweep_result["choice"],
        "before_points": sweep_result["points"],
    }
