"""Fit a ``DeviceProfile`` to measured submissions and say how well it predicts.

The model is the virtual device's own formula (``DeviceProfile.duration_ms``) with the two
per-context-token costs switched on::

    duration = overhead + prefill_ms_per_token * L
             + prefill_ms_per_context_token * (L * C + L * (L - 1) / 2)
             + [decode] decode_batch_ms + decode_ms_per_seq * B
                        + decode_ms_per_context_token * sum(c)

Least squares on relative error (each row divided by its measurement, so 1 ms steps count as
much as 100 ms ones), with every coefficient kept >= 0 by dropping negative ones and refitting.
Each grid shape is represented by its median sample, so a step slowed down by something else on
the machine does not pull the fit.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import replace

import torch

COEFFICIENTS = (
    "overhead_ms",
    "prefill_ms_per_token",
    "prefill_ms_per_context_token",
    "decode_batch_ms",
    "decode_ms_per_seq",
    "decode_ms_per_context_token",
)


def features(sub) -> list[float]:
    decode = 1.0 if sub.decode_seqs else 0.0
    return [
        1.0,
        float(sub.prefill_tokens),
        float(sub.prefill_context),
        decode,
        float(sub.decode_seqs),
        float(sub.decode_context),
    ]


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


def fit_profile(samples, base):
    """``base`` (a DeviceProfile) with its cost coefficients fitted to ``samples``."""
    x = torch.tensor([features(s) for s in samples], dtype=torch.float64)
    y = torch.tensor([s.measured_ms for s in samples], dtype=torch.float64)
    weight = 1.0 / y
    active = [j for j in range(x.shape[1]) if x[:, j].abs().sum() > 0]
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


def residuals(profile, samples) -> list[dict]:
    """Per submission: measured, predicted by ``profile`` (its own formula), and the error."""
    rows = []
    for sub in samples:
        predicted = profile.duration_ms(sub.batch, sub.context)
        rows.append(
            {
                "prefillTokens": sub.prefill_tokens,
                "prefillContext": sub.prefill_context,
                "decodeSeqs": sub.decode_seqs,
                "decodeContext": sub.decode_context,
                "measuredMs": sub.measured_ms,
                "predictedMs": predicted,
                "errorPct": 100.0 * (predicted - sub.measured_ms) / sub.measured_ms,
            }
        )
    return rows


def error_summary(rows: list[dict]) -> dict:
    errors = sorted(abs(r["errorPct"]) for r in rows)
    return {
        "count": len(errors),
        "medianAbsPct": statistics.median(errors),
        "meanAbsPct": statistics.fmean(errors),
        "p90AbsPct": errors[max(0, -(-len(errors) * 9 // 10) - 1)],
    }


def held_out(samples, shapes: list[str], base, share: float = 0.25, seed: int = 0) -> dict:
    """Leave out a random ``share`` of the grid's shapes (all repeats of each), fit on the rest,
    and report the error on the shapes left out."""
    distinct = sorted(set(shapes))
    left_out = set(random.Random(seed).sample(distinct, max(1, round(share * len(distinct)))))
    train = [(s, shape) for s, shape in zip(samples, shapes, strict=True) if shape not in left_out]
    test = [s for s, shape in zip(samples, shapes, strict=True) if shape in left_out]
    profile = fit_profile(medians(*zip(*train, strict=True)), base)
    return {
        "trainShapes": len(distinct) - len(left_out),
        "heldOutShapes": len(left_out),
        **error_summary(residuals(profile, test)),
    }
