"""Import a window of the Azure LLM inference trace 2023 as a trace document."""

from __future__ import annotations

import csv
import math
from datetime import datetime
from pathlib import Path

from .errors import SpecError

AZURE_ATTRIBUTION = (
    "Derived from the Azure LLM inference trace 2023 (Azure/AzurePublicDataset, CC-BY 4.0); "
    'Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting", '
    "ISCA 2024."
)


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
    picked = _window_rows(csv_path, start_s, duration_s)
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


def _window_rows(csv_path: Path, start_s: float, duration_s: float) -> list[tuple]:
    """``(seconds after the window start, context tokens, generated tokens)`` per row in it."""
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
    return picked


def _positive(value, name: str, allow_zero: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise SpecError(f"import: '{name}' must be a number {'>=' if allow_zero else '>'} 0")
    return float(value)
