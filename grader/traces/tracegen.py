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
          # optional request fields (drawn after the above, so older specs keep their traces):
          maxOutputTokens: (same forms)   # declared maximum, at least outputTokens
          deadlineMs: (same forms)        # deadline on the first token, relative to arrival
          deadlineShare: 0.5              # share of requests that get a deadline (default 1)
          tenants: {values: [chat, batch], weights: [3, 1]}
          readBytesPerS: (same forms)     # the client's read rate, bytes/s (streaming devices)
          cancelMs: (same forms)          # the client cancels this many ms after arrival
          cancelShare: 0.3                # share of requests that cancel (default 1)
          prefixes:                       # shared prompt content (prefix caching devices)
            share: 0.8                    # share of requests with a shared prefix (default 1)
            groups:                       # each such request draws one group by weight
              - {weight: 3, segments: [{id: sys0, tokens: 64}]}
              - {weight: 1, segments: [{id: sys0, tokens: 64}, {id: doc1, tokens: 40}]}
          pin: [{request: 1, outputTokens: 1}]   # the N-th request's lengths, not drawn

        A group's segments are cut where the request's prompt ends (a segment left with no
        tokens is dropped), so ``inputTokens`` stays what its distribution drew.

        ``pin`` replaces the lengths of the requests it names after they are drawn and before
        the optional fields (which see the pinned lengths); it draws nothing, so every other
        request is the one the seed gives. It is how a spec keeps a case that a graded check
        needs in every draw (a variant's ``vary: {pin: {set: [...]}}``).

A ``generate`` spec may also hold ``vary``: the fields a per-student variant draws again
(``grader.variants.drawn``); a ``requests`` spec's ``vary`` names the knobs of the
perturbation its variants draw (``grader.traces.perturb``). This module ignores it, so the
fixed trace stays as it was.

``import``
    a window of the Azure LLM inference trace (see ``import_azure``)::

        import: {azure: AzureLLMInferenceTrace_conv.csv, start: 40, duration: 2, scale: 100}

Every trace is validated with the lab's own ``servesim.trace.parse_trace`` before it is written.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import yaml

from ..schema import SchemaError, validate
from ..units import CODE_ROOT
from .azure import import_azure
from .errors import DataMissing, SpecError

DATA_ENV = "INFRALAB_DATA"
DEFAULT_DATA_DIR = CODE_ROOT.parent / "shared" / "data" / "azure-llm-2023"


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
    """The trace document a spec describes (not yet validated by the lab).

    The spec's shape is checked against ``grader/schemas/tracespec.schema.json`` first, so
    the code below reads fields it knows are there and well-typed.
    """
    try:
        validate(spec, "tracespec", source)
    except SchemaError as exc:
        raise SpecError(str(exc)) from None
    name, description = spec["name"], spec.get("description", "")
    if "requests" in spec:
        return {"name": name, "description": description, "requests": spec["requests"]}
    if "generate" in spec:
        requests = generate_requests(spec["generate"], f"{source}: generate")
        return {"name": name, "description": description, "requests": requests}
    imp = spec["import"]
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


def generate_requests(gen: dict, where: str) -> list[dict]:
    """The requests of a ``generate`` block (already checked against the spec schema)."""
    count = gen["count"]
    prefix = gen.get("idPrefix", "r")
    start = float(gen.get("startMs", 0.0))
    grid = float(gen.get("roundMs", 0.25))
    rng = np.random.default_rng(gen["seed"])
    gaps = _gaps(gen["arrivals"], count, rng)
    arrivals = start + np.concatenate([[0.0], np.cumsum(gaps[1:])])
    if grid > 0:
        arrivals = np.round(arrivals / grid) * grid
    inputs = _lengths(gen["inputTokens"], count, rng, f"{where}.inputTokens")
    outputs = _lengths(gen["outputTokens"], count, rng, f"{where}.outputTokens")
    requests = [
        {
            "id": f"{prefix}{n + 1}",
            "arrivalMs": float(arrivals[n]),
            "inputTokens": int(inputs[n]),
            "outputTokens": int(outputs[n]),
        }
        for n in range(count)
    ]
    _pin(gen.get("pin", ()), requests, f"{where}.pin")
    _optional_fields(gen, requests, rng, where)
    return requests


def _pin(pins, requests: list[dict], where: str) -> None:
    for pin in pins:
        if pin["request"] > len(requests):
            raise SpecError(f"{where}: request {pin['request']} is past 'count' ({len(requests)})")
        request = requests[pin["request"] - 1]
        request.update({k: v for k, v in pin.items() if k != "request"})


def _optional_fields(gen: dict, requests: list[dict], rng, where: str) -> None:
    """The optional request fields of a ``generate`` block, drawn in a fixed order."""
    count = len(requests)
    if "maxOutputTokens" in gen:
        declared = _lengths(gen["maxOutputTokens"], count, rng, f"{where}.maxOutputTokens")
        for request, value in zip(requests, declared, strict=True):
            if int(value) > request["outputTokens"]:
                request["maxOutputTokens"] = int(value)
    if "deadlineMs" in gen:
        deadlines = _lengths(gen["deadlineMs"], count, rng, f"{where}.deadlineMs")
        chosen = rng.random(count) < float(gen.get("deadlineShare", 1.0))
        for request, value, keep in zip(requests, deadlines, chosen, strict=True):
            if keep:
                request["deadlineMs"] = float(value)
    if "tenants" in gen:
        names, weights = gen["tenants"]["values"], gen["tenants"].get("weights")
        if weights is not None and (len(weights) != len(names) or sum(weights) <= 0):
            raise SpecError(f"{where}.tenants: 'weights' must be as many numbers >= 0 as 'values'")
        p = None if weights is None else np.asarray(weights, dtype=float) / sum(weights)
        for request, name in zip(
            requests, rng.choice(np.asarray(names), size=count, p=p), strict=True
        ):
            request["tenant"] = str(name)
    if "readBytesPerS" in gen:
        rates = _lengths(gen["readBytesPerS"], count, rng, f"{where}.readBytesPerS")
        for request, value in zip(requests, rates, strict=True):
            request["readBytesPerS"] = int(value)
    if "cancelShare" in gen and "cancelMs" not in gen:
        raise SpecError(f"{where}: 'cancelShare' needs 'cancelMs' (when the clients cancel)")
    if "cancelMs" in gen:
        delays = _lengths(gen["cancelMs"], count, rng, f"{where}.cancelMs")
        chosen = rng.random(count) < float(gen.get("cancelShare", 1.0))
        for request, value, keep in zip(requests, delays, chosen, strict=True):
            if keep:
                request["cancelMs"] = float(value)
    if "prefixes" in gen:
        _prefixes(gen["prefixes"], requests, rng, f"{where}.prefixes")


def _prefixes(doc: dict, requests: list[dict], rng, where: str) -> None:
    """Each chosen request's ``prefix``: one group's segments, cut at the end of its prompt."""
    groups = doc["groups"]
    weights = np.asarray([g.get("weight", 1) for g in groups], dtype=float)
    if weights.sum() <= 0:
        raise SpecError(f"{where}.groups: the weights must not all be 0")
    drawn = rng.choice(len(groups), size=len(requests), p=weights / weights.sum())
    chosen = rng.random(len(requests)) < float(doc.get("share", 1.0))
    for request, group, keep in zip(requests, drawn, chosen, strict=True):
        if not keep:
            continue
        segments, left = [], request["inputTokens"]
        for segment in groups[group]["segments"]:
            if left == 0:
                break
            take = min(int(segment["tokens"]), left)
            segments.append({"id": str(segment["id"]), "tokens": take})
            left -= take
        request["prefix"] = segments


def _gaps(doc: dict, count: int, rng) -> np.ndarray:
    process = doc["process"]
    if process == "fixed":
        return np.full(count, float(doc["intervalMs"]))
    rate = float(doc["ratePerMs"])
    if process == "poisson":
        return rng.exponential(1.0 / rate, count)
    shape = 1.0 / float(doc["cv"]) ** 2  # gamma: mean gap 1/rate, coefficient of variation cv
    return rng.gamma(shape, 1.0 / (rate * shape), count)


def _lengths(doc: dict, count: int, rng, where: str) -> np.ndarray:
    dist = doc["dist"]
    if dist == "constant":
        return np.full(count, doc["value"])
    if dist == "uniform":
        if doc["max"] < doc["min"]:
            raise SpecError(f"{where}: 'max' must be >= 'min'")
        return rng.integers(doc["min"], doc["max"] + 1, count)
    if dist == "choice":
        values, weights = doc["values"], doc.get("weights")
        p = None
        if weights is not None:
            if len(weights) != len(values) or sum(weights) <= 0:
                raise SpecError(f"{where}: 'weights' must be as many numbers >= 0 as 'values'")
            p = np.asarray(weights, dtype=float) / sum(weights)
        return rng.choice(np.asarray(values), size=count, p=p)
    draws = rng.lognormal(math.log(doc["median"]), doc["sigma"], count)
    return np.clip(np.rint(draws), doc.get("min", 1), doc.get("max", 10**6)).astype(int)
