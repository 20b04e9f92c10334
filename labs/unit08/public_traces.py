"""Unit 08's public traces: the chapter's constructions and seeded generated traces.

``python labs/unit08/public_traces.py [--check]`` (re)writes them into ``starter/unit08/traces/``;
a repo test fails when a file is stale. The hand constructions (``static-vs-continuous``,
``kv-pages``, ``lifo-victim``) are written out request by request; the others are drawn with
``random.Random`` from a fixed seed, so the files are reproducible, and the Azure ones read the
shared data set.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

from grader.traces.azure import AZURE_ATTRIBUTION
from grader.traces.tracegen import resolve_data_file
from grader.units import load_unit

TRACES_DIR = load_unit("unit08").lab_dir / "traces"


def _req(rid, arrival_ms, inp, out, **extra) -> dict:
    return {"id": rid, "arrivalMs": arrival_ms, "inputTokens": inp, "outputTokens": out, **extra}


def static_vs_continuous() -> dict:
    """Figure 31.1: A, B, C at 0 ms with 4, 1, 1 outputs left once their prefill is done.

    The prefill is free on the chapter's device profile, and its first token counts as the
    first output, so the requests have 5, 2 and 2 output tokens.
    """
    return {
        "name": "static-vs-continuous",
        "description": "Figure 31.1 of the chapter: three requests at 0 ms needing 4, 1 and 1 "
        "decode rounds after a free prefill; run with devices/round-10ms.json or "
        "devices/round-6-10ms.json (K = 2).",
        "requests": [_req("A", 0, 1, 5), _req("B", 0, 1, 2), _req("C", 0, 1, 2)],
    }


def kv_pages() -> dict:
    """Section 31.3's page example: caches of 257 and 255 tokens, then a 256-token prompt.

    X and Y are prefilled together (256 and 254 tokens); after one decode each they hold
    257 and 255 tokens (33 pages). Z arrives while the next decode runs and declares 1,024
    positions (256 + 768). W declares more than the 64-page pool can ever hold.
    """
    return {
        "name": "kv-pages",
        "description": "Section 31.3's KV page example; run with devices/kv-64-pages.json "
        "(64 pages of 16 tokens). W can never fit and is rejected at arrival.",
        "requests": [
            _req("X", 0, 256, 6),
            _req("Y", 0, 254, 6),
            _req("Z", 60, 256, 4, maxOutputTokens=768),
            _req("W", 80, 100, 4, maxOutputTokens=1000),
        ],
    }


def lifo_victim() -> dict:
    """What vLLM's LIFO victim costs: a long prompt thrown away part-way through its prefill.

    A and B (250-token prompts, 40 outputs) decode in a 64-page pool; L (500 tokens) starts as
    soon as its whole prompt's 32 pages are free. With B = 64 its prefill takes eight steps,
    while A and B grow into the pool's last pages; L, the most recently admitted, is the victim
    with most of its prompt done, and prefills all of it again once A and B are gone.
    """
    return {
        "name": "lifo-victim",
        "description": "A long prompt L starts while A and B decode; run with "
        "devices/kv-64-pages.json and --budget 64: when A and B need pages that L's chunks "
        "took, paged preempts L, the newest request, and its prefilled tokens are lost.",
        "requests": [_req("A", 0, 250, 40), _req("B", 0, 250, 40), _req("L", 30, 500, 4)],
    }


def _lognormal_int(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, round(median * math.exp(sigma * rng.gauss(0, 1)))))


def burst(seed: int = 8) -> dict:
    """A steady 4 req/s for 15 s with 30 extra requests inside half a second at 5 s.

    The public trace is seed 8; the lesson checks its claims on other seeds too, and a
    student's variant draws another (unit.yaml ``variants``).
    """
    rng = random.Random(seed)
    arrivals, t = [], 0.0
    while (t := t + rng.expovariate(4 / 1000)) < 15_000:
        arrivals.append(t)
    arrivals += [5_000 + rng.uniform(0, 500) for _ in range(30)]
    requests = []
    for i, arrival in enumerate(sorted(arrivals), start=1):
        out = _lognormal_int(rng, 120, 0.6, 4, 600)
        requests.append(
            _req(
                f"b{i:03d}",
                round(arrival, 3),
                _lognormal_int(rng, 300, 0.8, 16, 2000),
                out,
                maxOutputTokens=1024,
                deadlineMs=3000,
            )
        )
    return {
        "name": "burst",
        "description": "Open-loop burst: Poisson 4 req/s for 15 s plus 30 requests within "
        "0.5 s at 5 s. Every request declares 1,024 output positions at most and gives up "
        "when it has no first token 3 s after arriving.",
        "requests": requests,
    }


def tenants(seed: int = 31) -> dict:
    """Two tenants: ``chat`` sends short prompts steadily, ``batch`` floods long prompts early.

    The public trace is seed 31; a student's variant draws another (unit.yaml ``variants``).
    """
    rng = random.Random(seed)
    requests = []
    for i in range(40):
        requests.append(
            _req(
                f"c{i + 1:02d}",
                round(250.0 * i + rng.uniform(0, 100), 3),
                _lognormal_int(rng, 150, 0.5, 16, 600),
                _lognormal_int(rng, 80, 0.4, 8, 200),
                tenant="chat",
            )
        )
    for i in range(20):
        requests.append(
            _req(
                f"k{i + 1:02d}",
                round(50.0 * i, 3),
                _lognormal_int(rng, 2000, 0.3, 800, 4000),
                _lognormal_int(rng, 40, 0.4, 4, 120),
                tenant="batch",
            )
        )
    requests.sort(key=lambda r: (r["arrivalMs"], r["id"]))
    return {
        "name": "tenants",
        "description": "Two tenants: 'chat' (40 short prompts, one every 250 ms) and 'batch' "
        "(20 prompts of about 2,000 tokens in the first second).",
        "requests": requests,
    }


def azure_rows(csv_name: str, data_dir: Path | None = None):
    """``(seconds since the first row, prompt tokens, output tokens)`` for every row.

    The CSV is looked up as ``infralab trace import`` does (``data_dir``, $INFRALAB_DATA, the
    shared data folder); ``DataMissing`` when it is nowhere.
    """
    with open(resolve_data_file(csv_name, data_dir), newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    stamps = [_seconds(r["TIMESTAMP"]) for r in rows]
    return [
        (stamp - stamps[0], int(r["ContextTokens"]), int(r["GeneratedTokens"]))
        for stamp, r in zip(stamps, rows)
    ]


def _seconds(stamp: str) -> float:
    """Seconds since midnight UTC of 1970 of a TIMESTAMP, every fractional digit kept."""
    whole, _, fraction = stamp.strip().partition(".")
    base = datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    return base + (float(f"0.{fraction}") if fraction else 0.0)


def azure_window(csv_name, name, description, start_s, count, prefix, **extra) -> dict:
    rows = [row for row in azure_rows(csv_name) if row[0] >= start_s][:count]
    origin = rows[0][0]
    requests = [
        _req(f"{prefix}{i:04d}", round((t - origin) * 1000, 3), inp, out, **extra)
        for i, (t, inp, out) in enumerate(rows, start=1)
    ]
    return {"name": name, "description": f"{description} {AZURE_ATTRIBUTION}", "requests": requests}


def azure_conv_slice() -> dict:
    return azure_window(
        "AzureLLMInferenceTrace_conv.csv",
        "azure-conv-slice",
        "300 consecutive requests of the Azure conversation service from 600 s after the first "
        "row; arrival = ms since the slice's first request, prompt = ContextTokens, output = "
        "GeneratedTokens.",
        600.0,
        300,
        "a",
    )


def unseen() -> dict:
    return azure_window(
        "AzureLLMInferenceTrace_code.csv",
        "unseen",
        "A trace for predictions: 200 consecutive requests of the Azure code service from "
        "1,200 s after the first row, with a 10 s first-token deadline.",
        1200.0,
        200,
        "u",
        deadlineMs=10_000,
    )


BUILDERS = {
    "static-vs-continuous": static_vs_continuous,
    "kv-pages": kv_pages,
    "lifo-victim": lifo_victim,
    "burst": burst,
    "tenants": tenants,
    "azure-conv-slice": azure_conv_slice,
    "unseen": unseen,
}


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def stale(traces_dir: Path = TRACES_DIR) -> list[str]:
    return [
        name
        for name, build in BUILDERS.items()
        if not (path := traces_dir / f"{name}.json").exists()
        or path.read_text(encoding="utf-8") != render(build())
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python labs/unit08/public_traces.py", description=__doc__
    )
    parser.add_argument("--check", action="store_true", help="only report stale trace files")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        for name in names:
            print(f"stale: {name}.json")
        return 1 if names else 0
    TRACES_DIR.mkdir(parents=True, exist_ok=True)
    for name, build in BUILDERS.items():
        (TRACES_DIR / f"{name}.json").write_text(render(build()), encoding="utf-8")
        print(f"wrote {name}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
