"""Correctness of the real device on CPU: chunked prefill, paged cache, batched decode.

Tolerance for logits (float32, logits of order 1): max absolute difference 1e-4 between the
paged cache with small pages and a contiguous cache; generated tokens must be identical.
"""

from __future__ import annotations

import pytest

LOGIT_ATOL = 1e-4
PROMPT, STEPS = 11, 6


def _device(torch_cpu, page_tokens=2, pages=64, attention="exact"):
    from realdevice.config import MODELS
    from realdevice.executor import Executor
    from realdevice.kv_cache import PagedKVCache
    from realdevice.model import Transformer

    config = MODELS["tiny"]
    model = _device.cache.setdefault(config, Transformer.build(config))
    cache = PagedKVCache(config, pages, page_tokens)
    return Executor(model, cache, "cpu", attention=attention)


_device.cache = {}


def _generate(executor, rid, prompt, steps, chunk):
    from servesim import Batch, PrefillChunk

    executor.add_request(rid, prompt, steps + 1)
    logits, done = [], 0
    while done < prompt:
        n = min(chunk, prompt - done)
        executor.run(Batch(prefill=(PrefillChunk(rid, n),)))
        done += n
    logits.append(executor.last_logits[rid])
    for _ in range(steps):
        executor.run(Batch(decode=(rid,)))
        logits.append(executor.last_logits[rid])
    return executor.generated(rid), logits


def _dense_greedy(executor, rid, prompt, steps):
    """Greedy tokens from the no-cache forward over the whole sequence, one token at a time."""
    import torch
    from realdevice.executor import prompt_ids

    ids = prompt_ids(rid, prompt, executor.model.config.vocab)
    out = []
    for _ in range(steps + 1):
        logits = executor.model.forward_dense(torch.tensor(ids + out))
        out.append(int(logits[-1].argmax()))
    return out


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_chunked_prefill_gives_the_same_tokens(torch_cpu, chunk):
    full, _ = _generate(_device(torch_cpu), "req", PROMPT, STEPS, chunk=PROMPT)
    chunked, _ = _generate(_device(torch_cpu), "req", PROMPT, STEPS, chunk=chunk)
    assert len(full) == STEPS + 1
    assert chunked == full
    assert full == _dense_greedy(_device(torch_cpu), "req", PROMPT, STEPS)


def test_small_pages_match_a_contiguous_cache(torch_cpu):
    # page_tokens=64 > prompt + steps: one page per request, i.e. a contiguous buffer
    contiguous_tokens, contiguous = _generate(_device(torch_cpu, 64), "q", PROMPT, STEPS, 3)
    for page_tokens in (1, 2, 3):
        tokens, paged = _generate(_device(torch_cpu, page_tokens), "q", PROMPT, STEPS, 3)
        assert tokens == contiguous_tokens
        for a, b in zip(paged, contiguous, strict=True):
            assert (a - b).abs().max().item() <= LOGIT_ATOL


def test_interleaved_requests_do_not_share_pages(torch_cpu):
    """Two requests growing in turn get interleaved pages; each must still see only its own."""
    from servesim import Batch, PrefillChunk

    alone = _generate(_device(torch_cpu), "x", 7, 4, chunk=2)[0]
    ex = _device(torch_cpu, page_tokens=2)
    ex.add_request("x", 7, 5)
    ex.add_request("y", 9, 5)
    for _ in range(5):  # x and y prefill in turns, 2 tokens each (x done after 4 chunks)
        for rid, prompt in (("x", 7), ("y", 9)):
            left = prompt - ex.states[rid].prefilled
            if left:
                ex.run(Batch(prefill=(PrefillChunk(rid, min(2, left)),)))
    assert len(set(ex.cache.tables["x"].pages) & set(ex.cache.tables["y"].pages)) == 0
    for _ in range(4):
        ex.run(Batch(decode=("x", "y")))
    assert ex.generated("x") == alone


def test_decode_batch_equals_single_decodes(torch_cpu):
    from servesim import Batch, PrefillChunk

    prompts = {"a": 3, "b": 9, "c": 1, "d": 14}
    batched, single = _device(torch_cpu), _device(torch_cpu)
    for ex in (batched, single):
        for rid, n in prompts.items():
            ex.add_request(rid, n, STEPS + 1)
            ex.run(Batch(prefill=(PrefillChunk(rid, n),)))
    for _ in range(STEPS):
        batched.run(Batch(decode=tuple(prompts)))
        for rid in prompts:
            single.run(Batch(decode=(rid,)))
    for rid in prompts:
        assert len(batched.generated(rid)) == STEPS + 1
        assert batched.generated(rid) == single.generated(rid)


def test_page_pool_capacity_and_release(torch_cpu):
    from realdevice.kv_cache import KVCacheFullError
    from servesim import Batch, PrefillChunk

    ex = _device(torch_cpu, page_tokens=4, pages=3)
    ex.add_request("a", 8, 2)  # 8 prompt tokens: 2 pages
    ex.add_request("b", 8, 1)
    ex.run(Batch(prefill=(PrefillChunk("a", 8),)))
    assert ex.cache.pool.free == 1
    with pytest.raises(KVCacheFullError, match="needs 2 more page"):
        ex.run(Batch(prefill=(PrefillChunk("b", 8),)))
    assert ex.cache.pool.free == 1 and "b" not in ex.cache.tables  # all or nothing
    ex.run(Batch(decode=("a",)))  # a's 2nd token: a finishes, its pages go back
    assert ex.cache.pool.free == 3 and ex.generated("a") and "a" not in ex.states
    ex.run(Batch(prefill=(PrefillChunk("b", 8),)))
    assert ex.cache.pool.free == 3  # b had one output token: done at the end of its prefill


def test_executor_rejects_out_of_step_batches(torch_cpu):
    from realdevice.executor import ExecutionError
    from servesim import Batch, PrefillChunk

    ex = _device(torch_cpu)
    ex.add_request("a", 4, 3)
    with pytest.raises(ExecutionError, match="not in its decode phase"):
        ex.run(Batch(decode=("a",)))
    with pytest.raises(ExecutionError, match="engine says 1 cached"):
        ex.run(Batch(prefill=(PrefillChunk("a", 2),)), context={"a": 1})


def test_length_groups_bound_padding_and_calls(torch_cpu):
    from realdevice.attention_plan import length_groups

    lengths = [8 + 16 * i for i in range(40)] + [3, 3, 2000]
    groups = length_groups(lengths, max_groups=4)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert len(groups) <= 4
    assert length_groups([5, 6, 7, 9]) == [[0, 1, 2, 3]]  # within 2x: one call
    assert length_groups([1, 100]) == [[0], [1]]


def test_per_sequence_attention_equals_the_padded_groups(torch_cpu):
    """The exact path (each segment over its own keys) gives the padded path's logits on a mix
    of long and short contexts, chunks and decodes, whose groups pad short ones."""
    from servesim import Batch, PrefillChunk

    prompts = {"long": 40, "s1": 2, "s2": 5, "s3": 1, "mid": 13}
    runs = {kind: _device(torch_cpu, page_tokens=3, attention=kind) for kind in ("exact", "padded")}
    logits = {kind: [] for kind in runs}
    for kind, ex in runs.items():
        for rid, n in prompts.items():
            ex.add_request(rid, n, 8)
        ex.run(Batch(prefill=(PrefillChunk("long", 40), PrefillChunk("s1", 2))))
        logits[kind].append(dict(ex.last_logits))
        chunks = (PrefillChunk("s2", 5), PrefillChunk("s3", 1), PrefillChunk("mid", 7))
        ex.run(Batch(decode=("long", "s1"), prefill=chunks))
        logits[kind].append(dict(ex.last_logits))
        ex.run(Batch(decode=("long", "s1", "s2", "s3"), prefill=(PrefillChunk("mid", 6),)))
        logits[kind].append(dict(ex.last_logits))
        for _ in range(4):
            ex.run(Batch(decode=tuple(prompts)))
            logits[kind].append(dict(ex.last_logits))
    assert len(logits["exact"]) == 7
    for exact, padded in zip(logits["exact"], logits["padded"], strict=True):
        assert exact.keys() == padded.keys()
        for rid in exact:
            assert (exact[rid] - padded[rid]).abs().max().item() <= LOGIT_ATOL
    assert all(runs["exact"].generated(r) == runs["padded"].generated(r) for r in prompts)


def test_fused_varlen_attention_on_cuda_equals_the_padded_groups():
    """CUDA twin of the test above: the one fused ``varlen_attn`` call per layer (float16)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
    from realdevice.attention_plan import varlen_available
    from realdevice.backend import RealDevice
    from servesim import Batch, PrefillChunk

    if not varlen_available(torch.device("cuda"), torch.float16):
        pytest.skip("torch.nn.attention.varlen (flash, sm80+) is not available")
    runs = {
        kind: RealDevice("tiny", device="cuda", dtype="float16", page_tokens=4, attention=kind)
        for kind in ("exact", "padded")
    }
    assert runs["exact"].executor.varlen and not runs["padded"].executor.varlen
    out = {}
    for kind, real in runs.items():
        ex = real.executor
        for rid, n in {"long": 70, "a": 3, "b": 9}.items():
            ex.add_request(rid, n, 6)
        ex.run(Batch(prefill=(PrefillChunk("long", 70), PrefillChunk("a", 3))))
        ex.run(Batch(decode=("long", "a"), prefill=(PrefillChunk("b", 5),)))
        ex.run(Batch(decode=("long", "a"), prefill=(PrefillChunk("b", 4),)))
        ex.run(Batch(decode=("long", "a", "b")))
        out[kind] = dict(ex.last_logits)
    for rid in out["exact"]:
        assert (out["exact"][rid] - out["padded"][rid]).abs().max().item() <= 2e-2


def _flash_on_cpu(real_varlen_attn):
    """A CPU stand-in for ``varlen_attn`` with flash attention's semantics: segment ``i`` is
    rows ``cu_q[i]:cu_q[i+1]`` of the queries over keys ``cu_k[i]:cu_k[i+1]``, the causal
    mask aligned to the segment's last key, kv heads shared by ``heads // kv_heads`` queries.
    Every call is first bound to the real function's signature, so a renamed or removed
    keyword fails here on CPU before it fails on a GPU."""
    import inspect

    import torch
    import torch.nn.functional as F

    signature = inspect.signature(real_varlen_attn)
    calls = []

    def varlen_attn(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, **kwargs):
        bound = signature.bind(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, **kwargs)
        assert bound.arguments["window_size"] == (-1, 0) and bound.arguments["enable_gqa"]
        assert cu_seq_q.dtype == cu_seq_k.dtype == torch.int32
        out = torch.empty_like(query)
        group = query.shape[1] // key.shape[1]
        for i in range(len(cu_seq_q) - 1):
            q0, q1, k0, k1 = (
                int(x) for x in (cu_seq_q[i], cu_seq_q[i + 1], cu_seq_k[i], cu_seq_k[i + 1])
            )
            assert q1 - q0 <= max_q and k1 - k0 <= max_k
            q = query[q0:q1].transpose(0, 1)  # [heads, Lq, hd]
            k = key[k0:k1].transpose(0, 1).repeat_interleave(group, dim=0)
            v = value[k0:k1].transpose(0, 1).repeat_interleave(group, dim=0)
            rows = torch.arange(q1 - q0)[:, None] + (k1 - k0) - (q1 - q0)
            mask = torch.arange(k1 - k0)[None, :] <= rows
            out[q0:q1] = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(0, 1)
        calls.append(len(cu_seq_q) - 1)
        return out

    return varlen_attn, calls


def test_fused_varlen_plan_on_cpu_equals_the_padded_groups(torch_cpu, monkeypatch):
    """CPU twin of the CUDA test above: the executor's one-call varlen plan (packed keys,
    cumulative counts, causal alignment, GQA) is run through a CPU stand-in with flash
    attention's semantics and gives the padded path's logits and tokens."""
    import torch.nn.attention.varlen as varlen_module
    from servesim import Batch, PrefillChunk

    fake, calls = _flash_on_cpu(varlen_module.varlen_attn)
    monkeypatch.setattr(varlen_module, "varlen_attn", fake)
    runs = {kind: _device(torch_cpu, page_tokens=3, attention=kind) for kind in ("exact", "padded")}
    runs["exact"].varlen = True  # what varlen_available() decides on an sm80+ GPU in float16
    out = {kind: [] for kind in runs}
    for kind, ex in runs.items():
        for rid, n in {"long": 40, "a": 3, "b": 9, "c": 1}.items():
            ex.add_request(rid, n, 6)
        ex.run(Batch(prefill=(PrefillChunk("long", 40), PrefillChunk("a", 3))))
        out[kind].append(dict(ex.last_logits))
        ex.run(Batch(decode=("long", "a"), prefill=(PrefillChunk("b", 5), PrefillChunk("c", 1))))
        out[kind].append(dict(ex.last_logits))
        ex.run(Batch(decode=("long", "a", "c"), prefill=(PrefillChunk("b", 4),)))
        out[kind].append(dict(ex.last_logits))
        for _ in range(3):
            ex.run(Batch(decode=("long", "a", "b", "c")))
            out[kind].append(dict(ex.last_logits))
    assert calls, "the exact executor never took the varlen path"
    assert len(calls) == 6 * runs["exact"].model.config.layers
    for exact, padded in zip(out["exact"], out["padded"], strict=True):
        assert exact.keys() == padded.keys()
        for rid in exact:
            assert (exact[rid] - padded[rid]).abs().max().item() <= LOGIT_ATOL
    assert all(runs["exact"].generated(r) == runs["padded"].generated(r) for r in "abc")
