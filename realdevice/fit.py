"""Fit device profiles to measured steps and say how well each one predicts steps it never saw.

Both models are the virtual device's own formula (``servesim.rules.work_ms`` over a step's
``StepTerms``), with different coefficients free:

- ``affine``, the lab's device: ``overhead + prefill_ms_per_token * P``
  ``+ [decode] decode_batch_ms + decode_ms_per_seq * n``;
- ``context``, the same plus the two context terms: ``prefill_ms_per_context_token`` per
  attention pair of the prefill chunks (``q * s + q * (q + 1) / 2`` each, formula 31.4) and
  ``decode_ms_per_context_token`` per cached position a decoded sequence reads.

Least squares on relative error (each row divided by its measurement, so 1 ms steps count as
much as 100 ms ones), with every coefficient kept >= 0 by dropping negative ones and refitting.
Each grid shape is represented by its median sample, so a step slowed down by something else on
the machine does not pull the fit. ``held_out`` splits the shapes into folds and predicts every
step with the fits that did not see its shape; ``per_term`` says, term by term, how well the
context-aware model predicts the held-out steps that have the term and how much worse it does
with the term left out.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, replace

import torch
from servesim import rules
from servesim.rules import StepTerms

COEFFICIENTS = (
    "overhead_ms",
    "prefill_ms_per_token",
    "prefill_ms_per_context_token",
    "decode_batch_ms",
    "decode_ms_per_seq",
    "decode_ms_per_context_token",
)
CONTEXT_TERMS = ("prefill_ms_per_context_token", "decode_ms_per_context_token")
MODELS = {
    "affine": tuple(c for c in COEFFICIENTS if c not in CONTEXT_TERMS),
    "context": COEFFICIENTS,
}


@dataclass(frozen=True)
class Sample:
    """A measured step as the fit sees it (a ``backend.Submission`` has the same two fields)."""

    terms: StepTerms
    measured_ms: float


def features(terms: StepTerms) -> list[float]:
    return [
        1.0,
        float(terms.prefill_tokens),
        float(terms.attention_pairs),
        1.0 if terms.decode_seqs else 0.0,
        float(terms.decode_seqs),
        float(terms.decode_context),
    ]


def predicted_ms(profile, terms: StepTerms) -> float:
    """What ``profile`` charges for a step with ``terms`` (the engine's rule)."""
    return profile.overhead_ms + rules.work_ms(profile, terms)


def medians(samples, shapes: list[str]) -> list:
    """The sample with the median measured duration of each shape."""
    groups: dict[str, list] = {}
    for sample, shape in zip(samples, shapes, strict=True):
        groups.setdefault(shape, []).append(sample)
    picked = []
    for group in groups.values():
        ordered = sorted(group, key=lambda s: s.measured_ms)
        picked.append(ordered[(len(ordered) - 1) // 2])
    return picked


def fit_profile(samples, base, model: str | tuple[str, ...] = "context"):
    """``base`` (a DeviceProfile) with the coefficients of ``model`` (a name in ``MODELS`` or a
    tuple of coefficient names) fitted to ``samples`` and the others set to 0."""
    free = [COEFFICIENTS.index(name) for name in MODELS.get(model, model)]
    x = torch.tensor([features(s.terms) for s in samples], dtype=torch.float64)
    y = torch.tensor([s.measured_ms for s in samples], dtype=torch.float64)
    weight = 1.0 / y
    active = [j for j in free if x[:, j].abs().sum() > 0]
    coef = torch.zeros(x.shape[1], dtype=torch.float64)
    while active:
        a = x[:, active] * weight[:, None]
        solution = torch.linalg.lstsq(a, y * weight, driver="gelsd").solution
        negative = [j for j, value in zip(active, solution.tolist(), strict=True) if value < 0]
        if not negative:
            coef[active] = solution
            break
        worst = min(negative, key=lambda j: solution[active.index(j)].item())
        active.remove(worst)
    values = {name: float(v) for name, v in zip(COEFFICIENTS, coef.tolist(), strict=True)}
    return replace(base, **values)


def error_pct(predicted: float, measured: float) -> float:
    return 100.0 * (predicted - measured) / measured


def residuals(profile, samples) -> list[dict]:
    """Per submission: its terms, measured, predicted by ``profile``, and the error."""
    rows = []
    for sub in samples:
        predicted = predicted_ms(profile, sub.terms)
        rows.append(
            {
                **terms_json(sub.terms),
                "measuredMs": sub.measured_ms,
                "predictedMs": predicted,
                "errorPct": error_pct(predicted, sub.measured_ms),
            }
        )
    return rows


def terms_json(terms: StepTerms) -> dict:
    return {
        "prefillTokens": terms.prefill_tokens,
        "attentionPairs": terms.attention_pairs,
        "decodeSeqs": terms.decode_seqs,
        "decodeContext": terms.decode_context,
    }


def terms_from_json(row: dict) -> StepTerms:
    return StepTerms(
        row["prefillTokens"], row["attentionPairs"], row["decodeSeqs"], row["decodeContext"]
    )


def error_summary(rows: list[dict], key: str = "errorPct") -> dict:
    errors = sorted(abs(r[key]) for r in rows)
    return {
        "count": len(errors),
        "medianAbsPct": statistics.median(errors),
        "meanAbsPct": statistics.fmean(errors),
        "p90AbsPct": errors[max(0, -(-len(errors) * 9 // 10) - 1)],
    }


def held_out(samples, shapes: list[str], base, folds: int = 4, seed: int = 0) -> dict:
    """Every model fitted ``folds`` times, each time without one fold of the grid's shapes
    (shapes dealt to folds after a seeded shuffle, all repeats of a shape together); every step
    is predicted by the fit that left its shape out.

    Returns ``rows`` (one per step: shape, terms, measured, each model's held-out prediction and
    error) and ``errors`` (each model's summary over all rows).
    """
    distinct = sorted(set(shapes))
    predicted = _held_predictions(samples, shapes, base, MODELS, folds, seed)
    rows = []
    for i, (sample, shape) in enumerate(zip(samples, shapes, strict=True)):
        row = {"shape": shape, **terms_json(sample.terms), "measuredMs": sample.measured_ms}
        for model in MODELS:
            row[f"{model}Ms"] = predicted[model][i]
            row[f"{model}ErrorPct"] = error_pct(predicted[model][i], sample.measured_ms)
        rows.append(row)
    return {
        "folds": folds,
        "seed": seed,
        "shapes": len(distinct),
        "errors": {model: error_summary(rows, f"{model}ErrorPct") for model in MODELS},
        "perTerm": per_term(samples, shapes, base, rows, folds, seed),
        "rows": rows,
    }


def _held_predictions(samples, shapes, base, models: dict, folds: int, seed: int) -> dict:
    """Each model's prediction of every sample by the fit that left the sample's shape out."""
    distinct = sorted(set(shapes))
    random.Random(seed).shuffle(distinct)
    fold_of = {shape: i % folds for i, shape in enumerate(distinct)}
    predicted = {model: [0.0] * len(samples) for model in models}
    for fold in range(min(folds, len(distinct))):
        train = [
            (s, shape) for s, shape in zip(samples, shapes, strict=True) if fold_of[shape] != fold
        ]
        picked = medians(*zip(*train, strict=True))
        for model, free in models.items():
            profile = fit_profile(picked, base, free)
            for i, shape in enumerate(shapes):
                if fold_of[shape] == fold:
                    predicted[model][i] = predicted_ms(profile, samples[i].terms)
    return predicted


def per_term(samples, shapes, base, rows: list[dict], folds: int, seed: int) -> dict:
    """For each coefficient of the context-aware model: the held-out error of that model over
    the steps whose feature for it is not zero (``heldOut``; None when no step has it), and its
    held-out error over every step when it is fitted without that coefficient
    (``withoutTerm``): how much the term's own steps are off, and what the term buys."""
    full = MODELS["context"]
    ablated = {name: tuple(c for c in full if c != name) for name in full}
    predicted = _held_predictions(samples, shapes, base, ablated, folds, seed)
    result = {}
    for name in full:
        column = COEFFICIENTS.index(name)
        have = [row for row, s in zip(rows, samples, strict=True) if features(s.terms)[column]]
        without = [
            {"errorPct": error_pct(p, s.measured_ms)}
            for p, s in zip(predicted[name], samples, strict=True)
        ]
        result[_camel(name)] = {
            "steps": len(have),
            "heldOut": error_summary(have, "contextErrorPct") if have else None,
            "withoutTerm": error_summary(without),
        }
    return result


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
