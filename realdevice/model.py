"""A decoder-only transformer whose attention reads and writes a paged KV cache.

RMSNorm before attention and MLP, rotary positions on queries and keys (frequencies scaled as
the config says), grouped-query attention (``kv_heads`` K/V heads shared by ``heads`` query
heads), SwiGLU MLP, output head tied to the embedding or not, optional projection biases: the
Llama / Qwen2 / Mistral layout, so a checkpoint of that family loads as is (``checkpoint``).
A preset's weights are drawn from a fixed seed on the CPU, so every device gets the same model.

``forward`` runs one batch of *segments*: each segment is a run of consecutive positions of one
request (a prefill chunk, or the single token of a decode step). The K/V of the new positions
are written to the cache first; then each segment's queries attend to all of that request's
cached positions up to their own (earlier chunks included). ``forward_dense`` is the textbook
no-cache forward over one whole sequence, the reference the tests compare against. Which
positions a segment's queries attend to, and in which calls, is the batch's attention plan
(``attention_plan``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention_plan import AttentionPlan, PackedKeys, SegmentGroup
from .config import ModelConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.to(x.dtype) * self.weight


def rope_frequencies(config: ModelConfig, device=None) -> torch.Tensor:
    """Float32 ``[head_dim / 2]`` rotary frequencies, scaled as ``config.rope`` says."""
    dim, rope = config.head_dim, config.rope
    exponents = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
    inv_freq = 1.0 / (config.rope_theta**exponents)
    if rope.kind == "linear":
        return inv_freq / rope.factor
    if rope.kind == "llama3":
        low_wavelen = rope.original_max_positions / rope.low_freq_factor
        high_wavelen = rope.original_max_positions / rope.high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / rope.factor, inv_freq)
        smooth = (rope.original_max_positions / wavelen - rope.low_freq_factor) / (
            rope.high_freq_factor - rope.low_freq_factor
        )
        smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return torch.where(medium, smoothed, scaled)
    return inv_freq


def apply_rotary(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` ``[T, heads, head_dim]`` by its absolute positions (half-split layout)."""
    half = x.shape[-1] // 2
    angles = positions.float()[:, None] * inv_freq[None, :]
    cos, sin = angles.cos()[:, None, :], angles.sin()[:, None, :]
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        hd = config.head_dim
        bias = config.qkv_bias
        self.wq = nn.Linear(config.d_model, config.heads * hd, bias=bias)
        self.wk = nn.Linear(config.d_model, config.kv_heads * hd, bias=bias)
        self.wv = nn.Linear(config.d_model, config.kv_heads * hd, bias=bias)
        self.wo = nn.Linear(config.heads * hd, config.d_model, bias=config.out_bias)

    def _qkv(self, x, positions):
        c = self.config
        q = self.wq(x).view(-1, c.heads, c.head_dim)
        k = self.wk(x).view(-1, c.kv_heads, c.head_dim)
        v = self.wv(x).view(-1, c.kv_heads, c.head_dim)
        inv_freq = rope_frequencies(c, x.device)
        return apply_rotary(q, positions, inv_freq), apply_rotary(k, positions, inv_freq), v

    def _grouped(self, q: torch.Tensor) -> torch.Tensor:
        """``[S, Q, heads, hd]`` -> ``[S, kv_heads, group * Q, hd]``: the query heads that share a
        K/V head are stacked along the query axis, so K and V are never copied per head."""
        c = self.config
        s, length = q.shape[0], q.shape[1]
        group = c.heads // c.kv_heads
        q = q.view(s, length, c.kv_heads, group, c.head_dim).permute(0, 2, 3, 1, 4)
        return q.reshape(s, c.kv_heads, group * length, c.head_dim)

    def _ungrouped(self, out: torch.Tensor, length: int) -> torch.Tensor:
        """Inverse of ``_grouped``: ``[S, kv_heads, group * Q, hd]`` -> ``[S, Q, heads, hd]``."""
        c = self.config
        s = out.shape[0]
        out = out.view(s, c.kv_heads, c.heads // c.kv_heads, length, c.head_dim)
        return out.permute(0, 3, 1, 2, 4).reshape(s, length, c.heads, c.head_dim)

    def forward(self, x, positions, plan: AttentionPlan, k_cache, v_cache):
        """``x``: ``[T, d_model]``; ``k_cache``, ``v_cache``: this layer's pages."""
        c = self.config
        q, k, v = self._qkv(x, positions)
        k_cache.view(-1, c.kv_heads, c.head_dim).index_copy_(0, plan.slots, k)
        v_cache.view(-1, c.kv_heads, c.head_dim).index_copy_(0, plan.slots, v)
        if plan.varlen is not None:
            out = self._attend_varlen(q, plan.varlen, k_cache, v_cache)
        elif len(plan.groups) == 1 and plan.decode is None:
            out = self._attend(q, plan.groups[0], k_cache, v_cache)
        else:
            out = torch.empty_like(q)
            for group in plan.groups:
                out.index_copy_(0, group.rows, self._attend(q, group, k_cache, v_cache))
            if plan.decode is not None:
                d = plan.decode
                out.index_copy_(0, d.rows, self._attend_packed(q, d, k_cache, v_cache))
        return self.wo(out.reshape(-1, c.heads * c.head_dim))

    def _attend_varlen(self, q, p: PackedKeys, k_cache, v_cache) -> torch.Tensor:
        """``[T, heads, hd]``: the whole batch in one fused call over the packed keys (causal
        mask aligned to each segment's last key, as flash attention aligns it)."""
        from torch.nn.attention.varlen import varlen_attn

        c = self.config
        keys = k_cache.view(-1, c.kv_heads, c.head_dim)[p.key_slots]
        values = v_cache.view(-1, c.kv_heads, c.head_dim)[p.key_slots]
        return varlen_attn(
            q.contiguous(),
            keys,
            values,
            p.cu_q,
            p.cu_k,
            p.max_q,
            p.max_k,
            window_size=(-1, 0),
            enable_gqa=True,
        )

    def _attend_packed(self, q, d: PackedKeys, k_cache, v_cache) -> torch.Tensor:
        """``[D, heads, hd]``: each decode query over its own keys only, softmax per segment
        by scatter (float32 accumulation)."""
        c = self.config
        group = c.heads // c.kv_heads
        keys = k_cache.view(-1, c.kv_heads, c.head_dim)[d.key_slots].float()  # [N, kv, hd]
        values = v_cache.view(-1, c.kv_heads, c.head_dim)[d.key_slots].float()
        queries = q[d.rows].view(-1, c.kv_heads, group, c.head_dim).float()  # [D, kv, g, hd]
        scores = torch.einsum("nkgd,nkd->nkg", queries[d.key_segment], keys) / c.head_dim**0.5
        index = d.key_segment[:, None, None].expand_as(scores)
        peak = torch.full(queries.shape[:3], -torch.inf, device=q.device)
        peak = peak.scatter_reduce(0, index, scores, "amax")
        weights = torch.exp(scores - peak[d.key_segment])  # [N, kv, g]
        total = torch.zeros_like(peak).index_add_(0, d.key_segment, weights)
        mixed = torch.einsum("nkg,nkd->nkgd", weights, values)
        out = torch.zeros_like(queries).index_add_(0, d.key_segment, mixed) / total[..., None]
        return out.reshape(-1, c.heads, c.head_dim).to(q.dtype)

    def _attend(self, q, g: SegmentGroup, k_cache, v_cache) -> torch.Tensor:
        """``[queries, heads, hd]`` attention output of one group, in ``g.rows`` order."""
        c = self.config
        segments, length = g.query_rows.shape
        keys = k_cache[g.block_tables].reshape(segments, -1, c.kv_heads, c.head_dim)
        values = v_cache[g.block_tables].reshape(segments, -1, c.kv_heads, c.head_dim)
        queries = self._grouped(q[g.query_rows])  # [S, kv_heads, group * Q, hd]
        mask = g.mask.repeat(1, 1, c.heads // c.kv_heads, 1)  # [S, 1, group * Q, K]
        out = F.scaled_dot_product_attention(
            queries, keys.transpose(1, 2), values.transpose(1, 2), attn_mask=mask
        )
        return self._ungrouped(out, length)[g.query_valid]

    def forward_dense(self, x, positions):
        """Plain causal attention over one whole sequence, no cache."""
        q, k, v = self._qkv(x, positions)
        group = self.config.heads // self.config.kv_heads
        # textbook GQA: each K/V head copied to the query heads of its group
        k, v = (t.repeat_interleave(group, dim=1).transpose(0, 1) for t in (k, v))
        out = F.scaled_dot_product_attention(q.transpose(0, 1), k, v, is_causal=True)
        return self.wo(out.transpose(0, 1).reshape(x.shape[0], -1))


class SwiGLU(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        bias = config.mlp_bias
        self.gate = nn.Linear(config.d_model, config.d_ff, bias=bias)
        self.up = nn.Linear(config.d_model, config.d_ff, bias=bias)
        self.down = nn.Linear(config.d_ff, config.d_model, bias=bias)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = Attention(config)
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = SwiGLU(config)


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)
        if config.tie_embeddings:
            self.head.weight = self.embed.weight

    @classmethod
    def build(cls, config: ModelConfig, device="cpu", dtype=torch.float32) -> Transformer:
        """The model with random weights from ``config.seed``, identical on every device."""
        with torch.device("meta"):
            model = cls(config)
        model = model.to_empty(device="cpu")
        generator = torch.Generator().manual_seed(config.seed)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if name.endswith("norm.weight"):
                    param.fill_(1.0)
                else:  # unit-variance activations: std 1/sqrt(fan_in)
                    fan_in = param.shape[1] if param.dim() == 2 and "embed" not in name else 1
                    param.copy_(torch.randn(param.shape, generator=generator) / fan_in**0.5)
        return model.to(device=device, dtype=dtype).eval()

    @classmethod
    def from_weights(cls, config: ModelConfig, weights, device="cpu", dtype=torch.float32):
        """The model with ``weights`` (name -> tensor, in this module's names, e.g. from
        ``checkpoint.load``), cast to ``dtype`` on ``device``; every parameter must be given."""
        with torch.device("meta"):
            model = cls(config)
        model = model.to_empty(device=device).to(dtype)
        if config.tie_embeddings:
            model.head.weight = model.embed.weight
        with torch.no_grad():
            for name, param in model.named_parameters():
                given = weights[name]
                if given.shape != param.shape:
                    raise ValueError(
                        f"weight {name} has shape {tuple(given.shape)}, the config implies "
                        f"{tuple(param.shape)}"
                    )
                param.copy_(given)
        return model.eval()

    @torch.no_grad()
    def forward(self, tokens, positions, plan: AttentionPlan, cache) -> torch.Tensor:
        """Float32 logits ``[S, vocab]`` of each segment's last token; writes K/V to ``cache``."""
        x = self.embed(tokens)
        for layer, block in enumerate(self.blocks):
            x = x + block.attn(block.attn_norm(x), positions, plan, cache.k[layer], cache.v[layer])
            x = x + block.mlp(block.mlp_norm(x))
        return self.head(self.norm(x[plan.last_rows])).float()

    @torch.no_grad()
    def forward_dense(self, tokens) -> torch.Tensor:
        """Float32 logits ``[L, vocab]`` of every position of one sequence, without a cache."""
        positions = torch.arange(tokens.shape[0], device=tokens.device)
        x = self.embed(tokens)
        for block in self.blocks:
            x = x + block.attn.forward_dense(block.attn_norm(x), positions)
            x = x + block.mlp(block.mlp_norm(x))
        return self.head(self.norm(x)).float()
