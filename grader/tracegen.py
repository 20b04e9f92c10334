"""New traces for TAs: from a YAML spec (explicit list, seeded generator, or an Azure import).

A spec is a mapping with ``name``, ``description`` and exactly one of:

``requests``
    an explicit list of ``{id, arrivalMs, inputTokens, outputTokens}``;
``generate``
    a seeded generator (numpy ``default_rng(seed)``)::

        generate:
          seed: 7
          count: 10
          idPrefix: r            # ids r1, r2, ...
          startMs: 0             # first arrival
          roundMs: 0.25          # arrivals rounded to this grid (0: no rounding)
          arrivals: {process: fixed, intervalMs: 3}
                  | {process: poisson, ratePerMs: 0.3}
                  | {process: gamma, ratePerMs: 0.3, cv: 3}     # bursty when cv > 1
          inputTokens:  {dist: constant, value: 4}
                      | {dist: uniform, min: 1, max: 12}
                      | {dist: choice, values: [1, 12], weights: [3, 1]}
                      | {dist: lognormal, median: 6, sigma: 0.8, min: 1, max: 40}
          outputTokens: (same forms)

``import``
    a window of the Azure LLM inference trace (see ``import_azure``)::

        import: {azure: AzureLLMInferenceTrace_conv.csv, start: 40, duration: 2, scale: 100}

Every trace is validated with the lab's own ``servesim.trace.parse_trace`` before it is written.
"""

from __future__ import annotations

import csv
import math
import os
from datetime import datetime
from pathlib import Path

import numpy as np
import yaml

from .fields import check_fields
from .units import REPO_ROOT

AZURE_ATTRIBUTION = (
    "Derived from the Azure LLM inference trace 2023 (Azure/AzurePublicDataset, CC-BY 4.0); "
    'Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting", '
    "ISCA 2024."
)
DATA_ENV = "INFRALAB_DATA"
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "azure-llm-2023"


class SpecError(ValueError):
    """A trace spec or import request that cannot be used; the message names the field."""


class DataMissing(SpecError):
    """An import spec whose CSV is not on this machine (the shared data is not everywhere)."""


def load_yaml_or_json(path: Path, what: str = "spec"):
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise SpecError(f"{path}: not valid YAML{where}") from None


def trace_from_spec(spec, source: str = "spec", data_dir: Path | None = None) -> dict:
    """The trace document a spec describes (not yet validated by the lab)."""
    if not isinstance(spec, dict):
        raise SpecError(
            f"{source}: a spec must be a mapping with 'name' and one of "
            "'requests', 'generate', 'import'"
        )
    kinds = [k for k in ("requests", "generate", "import") if k in spec]
    if len(kinds) != 1:
        raise SpecError(f"{source}: give exactly one of 'requests', 'generate', 'import'")
    known = {"name", "description", "requests", "generate", "import"}
    check_fields(spec, source, known, error=SpecError)
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"{source}: field 'name' must be a non-empty string")
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise SpecError(f"{source}: field 'description' must be a string")
    kind = kinds[0]
    if kind == "requests":
        if not isinstance(spec["requests"], list):
            raise SpecError(f"{source}: field 'requests' must be a list")
        return {"name": name, "description": description, "requests": spec["requests"]}
    if kind == "generate":
        requests = generate_requests(spec["generate"], f"{source}: generate")
        return {"name": name, "description": description, "requests": requests}
    imp = spec["import"]
    if not isinstance(imp, dict) or "azure" not in imp:
        raise SpecError(f"{source}: import must be a mapping with 'azure: <csv file name>'")
    known = {"azure", "start", "duration", "scale", "timeScale", "maxRequests"}
    check_fields(imp, f"{source}: import", known, error=SpecError)
    csv_path = resolve_data_file(imp["azure"], data_dir)
    doc = import_azure(
        csv_path,
        start=imp.get("start", 0),
        duration=imp.get("duration"),
        scale=imp.get("scale", 1),
        time_scale=imp.get("timeScale"),
        max_requests=imp.get("maxRequests"),
        name=name,
    )
    if description:
        doc["description"] = f"{description} {doc['description']}"
    return doc


def resolve_data_file(name, data_dir: Path | None = None) -> Path:
    """A CSV named in a spec: as given, else in ``data_dir``/$INFRALAB_DATA/the shared data."""
    if not isinstance(name, str) or not name:
        raise SpecError("import: 'azure' must name a CSV file")
    path = Path(name)
    if path.is_file():
        return path
    folders = [Path(data_dir)] if data_dir else []
    if os.environ.get(DATA_ENV):
        folders.append(Path(os.environ[DATA_ENV]))
    folders.append(DEFAULT_DATA_DIR)
    for folder in folders:
        if (folder / path.name).is_file():
            return folder / path.name
    raise DataMissing(f"import: CSV '{name}' not found (pass --data DIR or set {DATA_ENV})")


# --- the seeded generator ----------------------------------------------------------------------


def _number(doc: dict, key: str, where: str, *, low: float = 0.0, strict: bool = False) -> float:
    value = doc.get(key)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (strict and value <= low):
        sign = ">" if strict else ">="
        raise SpecError(f"{where}: '{key}' must be a number {sign} {low:g}")
    return float(value)


def _int(doc: dict, key: str, where: str, *, low: int = 1) -> int:
    value = doc.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise SpecError(f"{where}: '{key}' must be an integer >= {low}")
    return value


def generate_requests(gen, where: str) -> list[dict]:
    if not isinstance(gen, dict):
        raise SpecError(f"{where}: must be a mapping")
    required = ("seed", "count", "arrivals", "inputTokens", "outputTokens")
    known = {*required, "idPrefix", "startMs", "roundMs"}
    check_fields(gen, where, known, required, error=SpecError)
    seed = _int(gen, "seed", where, low=0)
    count = _int(gen, "count", where)
    prefix = gen.get("idPrefix", "r")
    if not isinstance(prefix, str) or not prefix:
        raise SpecError(f"{where}: 'idPrefix' must be a non-empty string")
    start = _number(gen, "startMs", where) if "startMs" in gen else 0.0
    grid = _number(gen, "roundMs", where) if "roundMs" in gen else 0.25
    rng = np.random.default_rng(seed)
    gaps = _gaps(gen["arrivals"], count, rng, f"{where}.arrivals")
    arrivals = start + np.concatenate([[0.0], np.cumsum(gaps[1:])])
    if grid > 0:
        arrivals = np.round(arrivals / grid) * grid
    inputs = _lengths(gen["inputTokens"], count, rng, f"{where}.inputTokens")
    outputs = _lengths(gen["outputTokens"], count, rng, f"{where}.outputTokens")
    return [
        {
            "id": f"{prefix}{n + 1}",
            "arrivalMs": float(arrivals[n]),
            "inputTokens": int(inputs[n]),
            "outputTokens": int(outputs[n]),
        }
        for n in range(count)
    ]


def _gaps(doc, count: int, rng, where: str) -> np.ndarray:
    if not isinstance(doc, dict) or "process" not in doc:
        raise SpecError(f"{where}: must be a mapping with 'process' (fixed, poisson, gamma)")
    process = doc["process"]
    if process == "fixed":
        return np.full(count, _number(doc, "intervalMs", where))
    if process == "poisson":
        rate = _number(doc, "ratePerMs", where, strict=True)
        return rng.exponential(1.0 / rate, count)
    if process == "gamma":
        rate = _number(doc, "ratePerMs", where, strict=True)
        cv = _number(doc, "cv", where, strict=True)
        shape = 1.0 / cv**2  # mean gap 1/rate, coefficient of variation cv
        return rng.gamma(shape, 1.0 / (rate * shape), count)
    raise SpecError(f"{where}: unknown process {process!r} (fixed, poisson, gamma)")


def _lengths(doc, count: int, rng, where: str) -> np.ndarray:
    if not isinstance(doc, dict) or "dist" not in doc:
        raise SpecError(
            f"{where}: must be a mapping with 'dist' (constant, uniform, choice, lognormal)"
        )
    dist = doc["dist"]
    if dist == "constant":
        return np.full(count, _int(doc, "value", where))
    if dist == "uniform":
        low, high = _int(doc, "min", where), _int(doc, "max", where)
        if high < low:
            raise SpecError(f"{where}: 'max' must be >= 'min'")
        return rng.integers(low, high + 1, count)
    if dist == "choice":
        values = doc.get("values")
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values)
        ):
            raise SpecError(f"{where}: 'values' must be a non-empty list of integers >= 1")
        weights = doc.get("weights")
        p = None
        if weights is not None:
            if (
                not isinstance(weights, list)
                or len(weights) != len(values)
                or not all(isinstance(w, (int, float)) and w >= 0 for w in weights)
                or sum(weights) <= 0
            ):
                raise SpecError(f"{where}: 'weights' must be as many numbers >= 0 as 'values'")
            p = np.asarray(weights, dtype=float) / sum(weights)
        return rng.choice(np.asarray(values), size=count, p=p)
    if dist == "lognormal":
        median = _number(doc, "median", where, strict=True)
        sigma = _number(doc, "sigma", where)
        low = _int(doc, "min", where) if "min" in doc else 1
        high = _int(doc, "max", where) if "max" in doc else 10**6
        draws = rng.lognormal(math.log(median), sigma, count)
        return np.clip(np.rint(draws), low, high).astype(int)
    raise SpecError(f"{where}: unknown dist {dist!r} (constant, uniform, choice, lognormal)")


# --- the Azure import --------------------------------------------------------------------------


def _timestamp(text: str) -> datetime:
    # the CSV has 7 fractional digits; datetime takes 6
    head, _, frac = text.strip().partition(".")
    return datetime.strptime(f"{head}.{(frac + '000000')[:6]}", "%Y-%m-%d %H:%M:%S.%f")


def import_azure(
    csv_path: Path,
    *,
    start,
    duration,
    scale,
    time_scale=None,
    max_requests=None,
    name: str | None = None,
) -> dict:
    """A trace from the rows of an Azure LLM inference CSV in ``[start, start + duration)``.

    ``start`` and ``duration`` are seconds (``start`` counts from the file's first row).
    Token counts are divided by ``scale`` and rounded up (at least 1) to fit the toy device;
    times are divided by ``time_scale`` (default: ``scale``, which keeps tokens per millisecond
    as in the real trace) and measured from the window's start.
    """
    start_s = _positive(start, "start", allow_zero=True)
    if duration is None:
        raise SpecError("import: 'duration' (seconds) is required")
    duration_s = _positive(duration, "duration")
    scale = _positive(scale, "scale")
    time_scale = scale if time_scale is None else _positive(time_scale, "timeScale")
    if max_requests is not None and (not isinstance(max_requests, int) or max_requests < 1):
        raise SpecError("import: 'maxRequests' must be an integer >= 1")
    csv_path = Path(csv_path)
    try:
        with csv_path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise SpecError(f"{csv_path}: cannot read the CSV ({exc.strerror or exc})") from None
    needed = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}
    if not rows or not needed <= set(rows[0]):
        raise SpecError(f"{csv_path}: expected columns {', '.join(sorted(needed))}")
    try:
        first = _timestamp(rows[0]["TIMESTAMP"])
        picked = []
        for row in rows:
            offset = (_timestamp(row["TIMESTAMP"]) - first).total_seconds()
            if start_s <= offset < start_s + duration_s:
                picked.append(
                    (offset - start_s, int(row["ContextTokens"]), int(row["GeneratedTokens"]))
                )
    except ValueError as exc:
        raise SpecError(f"{csv_path}: unreadable row ({exc})") from None
    if max_requests is not None:
        picked = picked[:max_requests]
    if not picked:
        raise SpecError(
            f"{csv_path}: no request in the window [{start_s:g} s, {start_s + duration_s:g} s)"
        )
    requests = [
        {
            "id": f"az{n + 1}",
            "arrivalMs": round(offset * 1000.0 / time_scale, 3),
            "inputTokens": max(1, math.ceil(ctx / scale)),
            "outputTokens": max(1, math.ceil(gen / scale)),
        }
        for n, (offset, ctx, gen) in enumerate(picked)
    ]
    description = (
        f"{len(requests)} requests from {csv_path.name}, window {start_s:g}-"
        f"{start_s + duration_s:g} s after its first row; token counts divided by {scale:g} "
        f"(rounded up), times divided by {time_scale:g}. {AZURE_ATTRIBUTION}"
    )
    return {
        "name": name or f"azure-{csv_path.stem.rsplit('_', 1)[-1]}-{start_s:g}s",
        "description": description,
        "requests": requests,
    }


def _positive(value, name: str, allow_zero: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise SpecError(f"import: '{name}' must be a number {'>=' if allow_zero else '>'} 0")
    return float(value)
