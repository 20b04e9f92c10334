"""Check: the engine's prefix cache (``servesim.prefixcache``, unit 09) schedules as vLLM V1
does with prefix caching on.

The vLLM peer (``run_vllm_v1.py`` in the course's shared peer folder, ``PC=1``) drives vLLM
0.33.0's own scheduler and KV cache manager in virtual time on a CPU. This script runs it in
vLLM's interpreter (a subprocess) beside the lab engine on traces whose requests share prefixes
(segment lists, ``servesim/trace.py``; the peer gets the same token ids: each segment id a
seeded stream, the rest of each prompt and every output the request's own), with pools tight
enough to preempt and evict, and compares every request's token times. Our side is
``paged_prefix`` below: unit 08's ``paged`` with vLLM's admission rule under prefix caching
(the pages of the whole prompt, less the hit, plus the hit pages that are free now, must be
free; the chunk is what is left after the hit) and with victims freeing only the pages no one
else holds. It is a check of the engine's rules, not a graded policy. It exits 1 when anything
differs; CI does not run it (vLLM is about 9 GB).

    .venv/bin/python benchmarks/prefix_vs_vllm.py --vllm-python VENV/bin/python --peer DIR
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace, simulate  # noqa: E402
from servesim.prefixcache import Grow, Start  # noqa: E402

DRIVER = """
import json, random, sys
sys.path.insert(0, sys.argv[1])
import run_vllm_v1 as peer
jobs = json.load(sys.stdin)
out = []
for job in jobs:
    segments = {r["id"]: r.get("prefix", []) for r in job["requests"]}

    def prompt_ids(r, segments=segments):
        ids = []
        for seg in segments[r["id"]]:
            stream = random.Random("prefix:" + seg["id"])
            ids += [stream.randrange(peer.VOCAB_LO, peer.VOCAB_HI) for _ in range(seg["tokens"])]
        own = random.Random("req:" + str(r["id"]))
        rest = r["inputTokens"] - len(ids)
        ids += [own.randrange(peer.VOCAB_LO, peer.VOCAB_HI) for _ in range(rest)]
        return ids, own

    peer.prompt_ids = prompt_ids
    plain = [{k: v for k, v in r.items() if k != "prefix"} for r in job["requests"]]
    res, steps = peer.simulate(plain, prefix_caching=True, **job["config"])
    out.append({"times": [s["times"] for s in res], "steps": steps,
                "hits": [s["hit"] + s["resumeHit"] for s in res],
                "preemptions": sum(s["preemptions"] for s in res)})
print(json.dumps(out))
"""


def paged_prefix(view, budget: int) -> Batch:
    """vLLM V1's ``schedule()`` with prefix caching on (see the module docstring), on a copy
    of the engine's prefix cache that follows every decision."""
    pool, device, cap = view.pool.copy(), view.device, view.device.max_active
    walk, left = list(view.holders), budget
    decode, chunks, preempt = [], [], []
    done = 0
    while done < len(walk) and left > 0:
        seq = walk[done]
        remaining, cache = seq.remaining_prefill, seq.context_tokens
        tokens = min(remaining, left) if remaining else 1
        need = -(-(cache + tokens) // device.page_tokens) - len(pool.tables.get(seq.id, ()))
        while need > pool.free and walk[-1] is not seq:
            victim = walk.pop()
            preempt.append(victim.id)
            pool.release(victim.id)
        if need > pool.free:
            preempt.append(walk.pop().id)
            pool.release(seq.id)
            break
        pool.apply_step([Grow(seq.id, cache, tokens)], [], [])
        (chunks.append(PrefillChunk(seq.id, tokens)) if remaining else decode.append(seq.id))
        left -= tokens
        done += 1
    if not preempt:
        active = view.active
        for seq in view.waiting:
            if seq.holds_kv:
                continue
            if left <= 0 or (cap is not None and active >= cap):
                break
            target = seq.prefill_target
            hit = pool.hit_tokens(seq.id, target)
            hit_pages = [pool.page[next(iter(pool.cached[pool.key(seq.id, n)]))]
                         for n in range(hit // device.page_tokens)]  # fmt: skip
            revived = sum(1 for page in hit_pages if page.refs == 0)
            need = -(-target // device.page_tokens) - len(hit_pages) + revived
            if need > pool.free:
                break
            tokens = min(target - hit, left)
            pool.apply_step([], [], [Start(seq.id, hit, tokens, target)])
            chunks.append(PrefillChunk(seq.id, tokens, hit))
            left -= tokens
            active += 1
    return Batch(decode=decode, prefill=chunks, preempt=preempt)


def shared_trace(seed: int, n: int, groups: int, gap_ms: float) -> dict:
    """``n`` requests; most share a system prompt of one of ``groups`` groups, some also a
    document; prompt lengths such that pages are full, partly shared and unshared."""
    rng = random.Random(seed)
    reqs = []
    for i in range(n):
        segments = []
        if rng.random() < 0.85:
            segments.append(
                {"id": f"sys{rng.randrange(groups)}", "tokens": rng.choice([32, 40, 64])}
            )
            if rng.random() < 0.5:
                segments.append({"id": f"doc{rng.randrange(3)}", "tokens": rng.randint(8, 60)})
        prefix = sum(s["tokens"] for s in segments)
        req = {
            "id": f"q{i:03d}",
            "arrivalMs": round(i * gap_ms * rng.uniform(0.2, 1.8), 2),
            "inputTokens": prefix + rng.randint(1, 40),
            "outputTokens": rng.randint(1, 24),
        }
        if segments:
            req["prefix"] = segments
        reqs.append(req)
    reqs.sort(key=lambda r: r["arrivalMs"])
    return {"name": f"shared-{seed}", "requests": reqs}


CONFIG = {"p": 0.1, "d0": 20.0, "d1": 0.05, "o": 0.25}
# (requests, prefix groups, mean gap ms, B, K, M): pools that preempt and evict cached pages
CASES = ((24, 2, 30.0, 128, 8, 14), (40, 3, 10.0, 256, 16, 20), (60, 4, 5.0, 64, 32, 9))


def ours(doc: dict, B: int, K: int, M: int) -> list[list[float]]:
    device = DeviceProfile(
        prefill_ms_per_token=CONFIG["p"],
        decode_batch_ms=CONFIG["d0"],
        decode_ms_per_seq=CONFIG["d1"],
        overhead_ms=CONFIG["o"],
        max_active=K,
        kv_pages=M,
        prefix_caching=True,
    )
    timeline = simulate(parse_trace(doc), lambda view: paged_prefix(view, B), device)
    return [list(s.token_times_ms) for s in timeline.sequences], timeline


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-python", default=os.environ.get("VLLM_PYTHON"))
    parser.add_argument("--peer", default=os.environ.get("VLLM_PEER"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args(argv)
    if not args.vllm_python or not args.peer:
        parser.error("give --vllm-python and --peer (or VLLM_PYTHON and VLLM_PEER)")
    jobs = []
    for seed in args.seeds:
        for n, groups, gap, B, K, M in CASES:
            doc = shared_trace(seed, n, groups, gap)
            jobs.append((doc, {"B": B, "K": K, "M": M, **CONFIG}))
    done = subprocess.run(
        [args.vllm_python, "-c", DRIVER, args.peer],
        input=json.dumps([{"requests": d["requests"], "config": c} for d, c in jobs]),
        capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    if done.returncode:
        print(done.stderr[-3000:], file=sys.stderr)
        return 2
    failed = 0
    for (doc, config), peer in zip(jobs, json.loads(done.stdout.splitlines()[-1]), strict=True):
        times, timeline = ours(doc, config["B"], config["K"], config["M"])
        same = sum(len(a) == len(b) and all(abs(x - y) < 1e-6 for x, y in zip(a, b))
                   for a, b in zip(times, peer["times"]))  # fmt: skip
        hits = sum(s.prefix_hit_tokens for s in timeline.sequences)
        preempts = sum(s.recomputes for s in timeline.sequences)
        print(
            f"{doc['name']} n={len(doc['requests'])} B={config['B']} K={config['K']} "
            f"M={config['M']}: {same}/{len(times)} requests with identical token times; "
            f"steps {len(timeline.events)} vs vLLM {peer['steps']}; hit tokens {hits} vs "
            f"{sum(peer['hits'])}; preemptions {preempts} vs {peer['preemptions']}"
        )
        failed += same != len(times)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
