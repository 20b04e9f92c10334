"""GuideLLM, a benchmark client nobody here wrote, drives ``infralab serve`` on loopback; its
per-request TTFT and ITL are set against the session's run file.

    .venv/bin/pip install guidellm   # from the package registry (the ``bench`` extra)
    .venv/bin/python benchmarks/serve_guidellm.py [--requests 20] [--rate 4] [--unit unit07
        --policy chunked --chunk 32]

GuideLLM counts tokens with a local tokenizer folder that encodes exactly as the server's
byte tokenizer (``grader.serve.tokenizer.save_byte_tokenizer``); it sends ``/v1/completions``
at a constant rate with synthetic prompts. Requests are matched by their completion id. Per
request: GuideLLM's TTFT against the run file's ``ttftMs`` (the difference is the transport
overhead: the connection, the request's parsing and the event's delivery) and GuideLLM's ITL,
(last token - first token) / (tokens - 1) as its client saw them, against the run file's
``tpotMs``, the same formula on the runner's token times. The run file is checked by the
grader's replay (measured timing) first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.serve.child import Served
from grader.serve.tokenizer import save_byte_tokenizer
from grader.verify import verify_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--rate", type=float, default=4.0, help="requests per second")
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--output-tokens", type=int, default=16)
    parser.add_argument("--unit", default="unit07")
    parser.add_argument("--policy", default="chunked")
    args, flags = parser.parse_known_args()
    flags = flags or ["--chunk", "32"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        save_byte_tokenizer(folder / "tokenizer")
        served = Served(folder, args.unit, args.policy, *flags)
        try:
            report = guidellm(served.url, folder, args)
        finally:
            code, err, doc = served.end()
        if code != 0:
            print(err, file=sys.stderr)
            return 1
    (run,) = doc["runs"]
    problems = verify_run(run, doc["trace"], run["device"], timing="measured")
    print(f"run file: {len(run['requests'])} requests, replay problems: {len(problems)}")
    compare(report, {r["id"]: r for r in run["requests"]})
    return 1 if problems else 0


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


def compare(report: dict, by_id: dict) -> None:
    (bench,) = report["benchmarks"]
    rows = []
    for request in bench["requests"]["successful"]:
        mine = by_id.get(request.get("response_id"))
        if mine is None or request.get("time_to_first_token_ms") is None:
            continue
        rows.append(
            (
                request["time_to_first_token_ms"],
                mine["ttftMs"],
                request.get("inter_token_latency_ms"),
                mine["tpotMs"],
            )
        )
    errored = len(bench["requests"].get("errored", []))
    print(f"GuideLLM: {len(rows)} successful requests matched by id, {errored} errored")
    if not rows:
        return
    gaps = [g - r for g, r, _, _ in rows]
    guide = statistics.median(g for g, _, _, _ in rows)
    mine = statistics.median(r for _, r, _, _ in rows)
    print(f"TTFT ms, median: GuideLLM {guide:.2f}, run file {mine:.2f}")
    print(f"  GuideLLM - run file: median {statistics.median(gaps):.2f}, max {max(gaps):.2f}")
    itl = [(g, r) for _, _, g, r in rows if g is not None and r is not None]
    if itl:
        guide = statistics.median(g for g, _ in itl)
        mine = statistics.median(r for _, r in itl)
        worst = max(abs(g - r) for g, r in itl)
        print(f"ITL ms, median: GuideLLM {guide:.2f}, run file TPOT {mine:.2f}")
        print(f"  largest |GuideLLM - run file| of one request: {worst:.2f}")


if __name__ == "__main__":
    sys.exit(main())
