"""The engine's prefix cache against vLLM V1's (``benchmarks/prefix_vs_vllm.py``): token for
token with vLLM's own scheduler and KV cache manager when vLLM is at hand (``VLLM_PYTHON`` and
``VLLM_PEER``, about 9 GB, not in CI); its CPU twin checks that the comparison's policy runs
clean through the replay on the same traces, with hits, preemptions and evictions."""

from __future__ import annotations

import importlib.util
import os

import pytest
from servesim import DeviceProfile, prefixcache
from servesim.runfile import build_run

from grader.units import REPO_ROOT
from grader.verify import replay_run

_spec = importlib.util.spec_from_file_location(
    "prefix_vs_vllm", REPO_ROOT / "benchmarks" / "prefix_vs_vllm.py"
)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.skipif(
    not (os.environ.get("VLLM_PYTHON") and os.environ.get("VLLM_PEER")),
    reason="needs vLLM 0.33.0 (VLLM_PYTHON) and its peer harness (VLLM_PEER)",
)
def test_prefix_cache_equals_vllm_token_for_token():
    assert bench.main(["--seeds", "1", "2", "3"]) == 0


@pytest.mark.parametrize("case", bench.CASES)
def test_comparison_policy_runs_clean_with_hits_preemptions_and_evictions(case, monkeypatch):
    n, groups, gap, budget, k, m = case
    evicted = []
    evict = prefixcache.BlockPool._evict
    monkeypatch.setattr(
        prefixcache.BlockPool, "_evict", lambda pool, n: evicted.append(n) or evict(pool, n)
    )
    doc = bench.shared_trace(1, n, groups, gap)
    _, timeline = bench.ours(doc, budget, k, m)
    assert sum(s.prefix_hit_tokens for s in timeline.sequences) > 0
    assert sum(s.recomputes for s in timeline.sequences) > 0
    assert evicted
    device = DeviceProfile(**_profile(k, m))
    run = build_run("paged_prefix", {}, device, timeline, None, extended=True)
    run["limits"] = {"budget": budget, "queueCap": None}
    problems, _ = replay_run(run, doc, device.to_json())
    assert problems == []


def _profile(k, m):
    c = bench.CONFIG
    return {
        "prefill_ms_per_token": c["p"],
        "decode_batch_ms": c["d0"],
        "decode_ms_per_seq": c["d1"],
        "overhead_ms": c["o"],
        "max_active": k,
        "kv_pages": m,
        "prefix_caching": True,
    }
