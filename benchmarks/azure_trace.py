"""Turn a window of the Azure LLM inference trace (CSV) into a lab trace document.

Data: Azure LLM inference trace 2023, from the public repository Azure/AzurePublicDataset,
licensed CC-BY 4.0. It accompanies: Pratyush Patel, Esha Choukse, Chaojie Zhang, Aashaka Shah,
Íñigo Goiri, Saeed Maleki, Ricardo Bianchini. "Splitwise: Efficient generative LLM inference
using phase splitting", ISCA 2024. Any trace file made from it carries this attribution in its
description.

CSV columns: ``TIMESTAMP`` (e.g. ``2023-11-16 18:15:46.6805900``), ``ContextTokens`` (prompt
length), ``GeneratedTokens`` (output length).
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

ATTRIBUTION = (
    "Derived from the Azure LLM inference trace 2023 (Azure/AzurePublicDataset, CC-BY 4.0; "
    "Patel et al., Splitwise, ISCA 2024)."
)


class AzureTraceError(ValueError):
    """A CSV that cannot be imported; the message names the file and line."""


def _seconds(stamp: str) -> float:
    """Seconds since the epoch of a TIMESTAMP with any number of fractional digits."""
    whole, _, fraction = stamp.strip().partition(".")
    base = datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").timestamp()
    return base + (float(f"0.{fraction}") if fraction else 0.0)


def import_azure(
    path: Path,
    *,
    requests: int = 2000,
    skip: int = 0,
    speedup: float = 1.0,
    max_input: int | None = None,
    max_output: int | None = None,
) -> dict:
    """``requests`` rows after the first ``skip``, arrivals relative to the first of them and
    divided by ``speedup``; lengths clipped to ``max_input``/``max_output`` when given."""
    path = Path(path)
    if speedup <= 0:
        raise AzureTraceError(f"speedup must be > 0, got {speedup}")
    rows = []
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            for line, row in enumerate(csv.DictReader(handle), start=2):
                if line - 2 < skip:
                    continue
                if len(rows) == requests:
                    break
                try:
                    rows.append(
                        (
                            _seconds(row["TIMESTAMP"]),
                            int(row["ContextTokens"]),
                            int(row["GeneratedTokens"]),
                        )
                    )
                except (KeyError, TypeError, ValueError) as exc:
                    raise AzureTraceError(f"{path}:{line}: unreadable row ({exc})") from None
    except OSError as exc:
        raise AzureTraceError(f"{path}: cannot read it ({exc.strerror})") from None
    if not rows:
        raise AzureTraceError(f"{path}: no rows after skipping {skip}")
    t0 = min(r[0] for r in rows)
    out = []
    for index, (stamp, prompt, generated) in enumerate(sorted(rows, key=lambda r: r[0])):
        out.append(
            {
                "id": f"az{index:05d}",
                "arrivalMs": round((stamp - t0) * 1000.0 / speedup, 3),
                "inputTokens": max(1, min(prompt, max_input or prompt)),
                "outputTokens": max(1, min(generated, max_output or generated)),
            }
        )
    clip = f", lengths clipped to {max_input}/{max_output}" if max_input or max_output else ""
    return {
        "name": f"azure-{path.stem.rsplit('_', 1)[-1]}-{len(out)}",
        "description": (
            f"{len(out)} requests from {path.name} (rows {skip + 1}-{skip + len(out)}), arrivals "
            f"{speedup:g}x faster than recorded{clip}. {ATTRIBUTION}"
        ),
        "requests": out,
    }
