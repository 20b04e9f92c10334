"""Model shapes: the preset sizes (random weights, fixed seed) and what a checkpoint states.

A preset measures cost, not quality: its weights are random. ``checkpoint.load`` builds a
``ModelConfig`` from a Hugging Face ``config.json`` instead (see that module for the fields read).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class RopeScaling:
    """Rotary frequency scaling, as a checkpoint's ``rope_scaling`` / ``rope_parameters`` says.

    ``kind`` is ``default`` (none), ``linear`` (every frequency divided by ``factor``) or
    ``llama3`` (low frequencies divided by ``factor``, high ones kept, a smooth ramp between,
    set by ``low_freq_factor``, ``high_freq_factor`` and ``original_max_positions``).
    """

    kind: str = "default"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_positions: int = 8192


@dataclass(frozen=True)
class ModelConfig:
    name: str
    vocab: int
    d_model: int
    layers: int
    heads: int
    kv_heads: int  # grouped-query attention: each K/V head serves heads // kv_heads query heads
    d_ff: int  # SwiGLU hidden width
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    seed: int = 0
    head_size: int = 0  # 0: d_model // heads (a checkpoint may state another, e.g. Gemma-style)
    qkv_bias: bool = False  # Qwen2: biases on the q, k and v projections
    out_bias: bool = False  # Llama's attention_bias also puts one on the output projection
    mlp_bias: bool = False
    tie_embeddings: bool = False  # the output head reuses the embedding matrix
    rope: RopeScaling = field(default_factory=RopeScaling)
    imitates: str = ""  # presets: which real model's shape this one scales down

    def __post_init__(self):
        if self.heads % self.kv_heads or (not self.head_size and self.d_model % self.heads):
            raise ValueError(f"model {self.name}: heads must divide d_model, kv_heads heads")
        if self.head_dim % 2:
            raise ValueError(f"model {self.name}: head_dim must be even for rotary positions")

    @property
    def head_dim(self) -> int:
        return self.head_size or self.d_model // self.heads

    @property
    def parameters(self) -> int:
        """Weight count (biases included; a tied output head counted once)."""
        q, kv, d = self.heads * self.head_dim, self.kv_heads * self.head_dim, self.d_model
        per_layer = 2 * d * q + 2 * d * kv + 3 * d * self.d_ff + 2 * d
        per_layer += (q + 2 * kv) * self.qkv_bias + d * self.out_bias
        per_layer += (2 * self.d_ff + d) * self.mlp_bias
        heads_out = 1 if self.tie_embeddings else 2
        return self.layers * per_layer + heads_out * self.vocab * d + d

    def kv_bytes_per_token(self, element_bytes: int) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * element_bytes

    def to_json(self) -> dict:
        return {**asdict(self), "headDim": self.head_dim, "parameterCount": self.parameters}


MODELS = {
    config.name: config
    for config in (
        ModelConfig(
            "tiny",
            vocab=256,
            d_model=64,
            layers=2,
            heads=4,
            kv_heads=2,
            d_ff=176,
            imitates="no real model: a toy of the Llama layout (GQA 2:1, SwiGLU 2.75x) for tests",
        ),
        ModelConfig(
            "small",
            vocab=8192,
            d_model=512,
            layers=8,
            heads=8,
            kv_heads=4,
            d_ff=1408,
            imitates="Llama-2's proportions (SwiGLU 2.75x, head_dim 64) at width 512, GQA 2:1",
        ),
        ModelConfig(
            "medium",
            vocab=32000,
            d_model=1024,
            layers=16,
            heads=16,
            kv_heads=4,
            d_ff=2816,
            imitates="Qwen1.5-0.5B's width (1024, 16 heads, d_ff 2816) with 16 layers, "
            "GQA 4:1 and Llama-2's vocabulary",
        ),
        ModelConfig(
            "large",
            vocab=32000,
            d_model=1536,
            layers=24,
            heads=16,
            kv_heads=4,
            d_ff=4096,
            imitates="Qwen2-1.5B's width (1536) with 24 layers, GQA 4:1, a narrower MLP and "
            "Llama-2's vocabulary",
        ),
    )
}
