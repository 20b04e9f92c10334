"""Model sizes. Weights are random (fixed seed): the runner measures cost, not quality."""

from __future__ import annotations

from dataclasses import asdict, dataclass


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

    def __post_init__(self):
        if self.d_model % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"model {self.name}: heads must divide d_model, kv_heads heads")
        if self.head_dim % 2:
            raise ValueError(f"model {self.name}: head_dim must be even for rotary positions")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def parameters(self) -> int:
        """Weight count (embedding and output head untied)."""
        kv = self.kv_heads * self.head_dim
        per_layer = 2 * self.d_model * self.d_model + 2 * self.d_model * kv
        per_layer += 3 * self.d_model * self.d_ff + 2 * self.d_model
        return self.layers * per_layer + 2 * self.vocab * self.d_model + self.d_model

    def kv_bytes_per_token(self, element_bytes: int) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * element_bytes

    def to_json(self) -> dict:
        return {**asdict(self), "headDim": self.head_dim, "parameterCount": self.parameters}


MODELS = {
    config.name: config
    for config in (
        ModelConfig("tiny", vocab=256, d_model=64, layers=2, heads=4, kv_heads=2, d_ff=176),
        ModelConfig("small", vocab=8192, d_model=512, layers=8, heads=8, kv_heads=4, d_ff=1408),
        ModelConfig(
            "medium", vocab=32000, d_model=1024, layers=16, heads=16, kv_heads=4, d_ff=2816
        ),
        ModelConfig("large", vocab=32000, d_model=1536, layers=24, heads=16, kv_heads=4, d_ff=4096),
    )
}
