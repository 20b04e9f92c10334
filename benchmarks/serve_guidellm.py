"""GuideLLM, a benchmark client nobody here wrote, drives ``infralab serve`` on loopback; its
per-request TTFT and ITL are checked against the session's run file, after subtracting a
transport overhead measured in the same session.

    .venv/bin/pip install guidellm   # from the package registry (the ``bench`` extra)
    .venv/bin/python benchmarks/serve_guidellm.py [--runs 3] [--requests 12] [--rate 4]
        [--unit unit07 --policy chunked --chunk 32]

Each run is one session. First the transport overhead is measured: ``--probes`` streamed
completions sent one at a time by the official ``openai`` client, after one warm-up probe that
is not counted (the first connection and the model's first steps) (as
``tests/serve/test_serve_clients.py`` times them), each one's client TTFT less the run file's
``ttftMs`` for the same completion id; the overhead is their median, the transport's jitter
their largest less their smallest. Then GuideLLM sends ``/v1/completions`` at a constant rate
with synthetic prompts, counting tokens with a local tokenizer folder that encodes exactly as
the server's byte tokenizer (``grader.serve.tokenizer.save_byte_tokenizer``). Its requests are
matched to the run file's by completion id, and for each:

- TTFT: GuideLLM's ``time_to_first_token_ms`` less the overhead, against ``ttftMs``;
- ITL: GuideLLM's ``inter_token_latency_ms``, (last token - first token) / (tokens - 1) as its
  client saw them, against ``tpotMs``, the same formula on the runner's token times (the
  overhead shifts both ends alike, so nothing is subtracted).

Verdict per figure: ``agree`` when the median difference over the matched requests is within
the tolerance, ``max(FLOOR_MS, jitter)``, else ``disagree``; with no matched request, ``not yet
known``. The run file must pass the grader's replay (measured timing) first. With ``--runs N``
the figures of each run are printed, then their median over the runs.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.serve.child import Served
from grader.serve.tokenizer import save_byte_tokenizer
from grader.verify import verify_run

FLOOR_MS = 2.0  # the least tolerance: the clocks' and the event loop's own granularity
FIGURES = ("overhead", "jitter", "ttft_gap", "itl_gap", "ttft_guidellm", "ttft_run", "itl_run")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--probes", type=int, default=5)
    parser.add_argument("--rate", type=float, default=4.0, help="requests per second")
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--output-tokens", type=int, default=16)
    parser.add_argument("--unit", default="unit07")
    parser.add_argument("--policy", default="chunked")
    args, flags = parser.parse_known_args()
    flags = flags or ["--chunk", "32"]
    results = []
    for number in range(1, args.runs + 1):
        figures = one_run(args, flags)
        if figures is None:
            return 1
        print(f"run {number}: " + verdicts(figures))
        results.append(figures)
    if len(results) > 1:
        median = {k: statistics.median(r[k] for r in results) for k in FIGURES}
        median["matched"] = min(r["matched"] for r in results)
        print(f"median of {len(results)} runs: " + verdicts(median))
    return 0


def one_run(args, flags) -> dict | None:
    """One session: probes, then GuideLLM; the figures (None: the session failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        save_byte_tokenizer(folder / "tokenizer")
        served = Served(folder, args.unit, args.policy, *flags)
        try:
            probes = probe(served.url, args)
            report = guidellm(served.url, folder, args)
        finally:
            code, err, doc = served.end()
        if code != 0:
            print(err, file=sys.stderr)
            return None
    (run,) = doc["runs"]
    problems = verify_run(run, doc["trace"], run["device"], timing="measured")
    if problems:
        print(f"the run file fails the replay: {problems[0]}", file=sys.stderr)
        return None
    return figures(report, probes, {r["id"]: r for r in run["requests"]})


def probe(url: str, args) -> dict[str, float]:
    """Completion id -> the openai client's TTFT (ms) of each probe, sent one at a time (the
    warm-up probe left out)."""
    import openai

    api = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
    seen = {}
    for i in range(args.probes + 1):
        sent, first, rid = time.monotonic(), None, None
        for event in api.completions.create(
            model="tiny", prompt=f"probe {i}", max_tokens=args.output_tokens, stream=True
        ):
            rid = event.id
            if first is None and event.choices and event.choices[0].finish_reason is None:
                first = (time.monotonic() - sent) * 1000.0
        seen[rid] = first
    return dict(list(seen.items())[1:])


def guidellm(url: str, folder: Path, args) -> dict:
    out = folder / "guidellm.json"
    sizes = f"prompt_tokens={args.prompt_tokens},output_tokens={args.output_tokens}"
    command = [
        str(Path(sys.executable).with_name("guidellm")),
        "run",
        "--backend",
        f"kind=openai_http,target={url},request_format=/v1/completions",
        "--data",
        f"kind=synthetic_text,{sizes}",
        "--profile",
        f"kind=constant,rate={args.rate}",
        "--constraint",
        f"kind=max_requests,count={args.requests}",
        "--tokenizer",
        f"kind=hf_auto,model={folder / 'tokenizer'}",
        "--output",
        f"kind=json,path={out}",
        "--disable-progress",
    ]
    subprocess.run(command, check=True, cwd=folder, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def figures(report: dict, probes: dict[str, float], by_id: dict) -> dict:
    """The run's figures (ms): overhead and jitter from the probes; per matched GuideLLM
    request, the median differences after the overhead, and the medians themselves."""
    overheads = [ttft - by_id[rid]["ttftMs"] for rid, ttft in probes.items()]
    overhead = statistics.median(overheads)
    (bench,) = report["benchmarks"]
    rows = []
    for request in bench["requests"]["successful"]:
        mine = by_id.get(request.get("response_id"))
        if mine is None or request.get("time_to_first_token_ms") is None:
            continue
        rows.append(
            (request["time_to_first_token_ms"], mine, request.get("inter_token_latency_ms"))
        )
    itl = [(g, m["tpotMs"]) for _, m, g in rows if g is not None and m["tpotMs"] is not None]
    nan = float("nan")

    def median(values) -> float:
        values = list(values)
        return statistics.median(values) if values else nan

    return {
        "matched": len(rows),
        "overhead": overhead,
        "jitter": max(overheads) - min(overheads),
        "ttft_gap": median(g - overhead - m["ttftMs"] for g, m, _ in rows),
        "itl_gap": median(g - r for g, r in itl),
        "ttft_guidellm": median(g for g, _, _ in rows),
        "ttft_run": median(m["ttftMs"] for _, m, _ in rows),
        "itl_run": median(r for _, r in itl),
    }


def verdicts(f: dict) -> str:
    """One line: the overhead, then each figure's verdict with its numbers."""
    tolerance = max(FLOOR_MS, f["jitter"])

    def verdict(gap: float) -> str:
        if f["matched"] == 0 or math.isnan(gap):
            return "not yet known"
        return "agree" if abs(gap) <= tolerance else "disagree"

    return (
        f"{f['matched']} requests matched; transport overhead {f['overhead']:.2f} ms "
        f"(jitter {f['jitter']:.2f}, tolerance {tolerance:.2f}); TTFT {verdict(f['ttft_gap'])}: "
        f"GuideLLM {f['ttft_guidellm']:.2f} - overhead vs run file {f['ttft_run']:.2f}, "
        f"median difference {f['ttft_gap']:+.2f}; ITL {verdict(f['itl_gap'])}: median "
        f"difference {f['itl_gap']:+.2f} (run file TPOT {f['itl_run']:.2f})"
    )


if __name__ == "__main__":
    sys.exit(main())
