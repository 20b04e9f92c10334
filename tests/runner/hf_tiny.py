"""Tiny random Hugging Face checkpoints for the runner tests, built with ``transformers``."""

from __future__ import annotations

import pytest

CONFIGS = {
    "llama-llama3-rope": (
        "LlamaConfig",
        {
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 16,
            },
            "rope_theta": 500.0,
        },
    ),
    "llama-linear-rope-tied": (
        "LlamaConfig",
        {"rope_scaling": {"rope_type": "linear", "factor": 2.0}, "tie_word_embeddings": True},
    ),
    "qwen2-bias-tied": ("Qwen2Config", {"tie_word_embeddings": True}),
    "qwen2-bias-untied": ("Qwen2Config", {"tie_word_embeddings": False}),
}


def save_model(folder, kind: str) -> None:
    """A tiny random model of ``kind`` saved with ``save_pretrained``; weights of unit scale
    (``transformers``' own init is 0.02 wide with zero biases, which would hide mistakes)."""
    import torch

    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    config_class, extra = CONFIGS[kind]
    config = getattr(transformers, config_class)(
        vocab_size=97,
        hidden_size=48,
        intermediate_size=80,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=256,
        **extra,
    )
    model_class = {"LlamaConfig": "LlamaForCausalLM", "Qwen2Config": "Qwen2ForCausalLM"}
    model = getattr(transformers, model_class[config_class])(config)
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator)
            if "norm" in name:
                param.copy_(1 + 0.1 * noise)
            elif param.dim() == 1:  # biases
                param.copy_(0.5 * noise)
            else:
                fan_in = 1 if "embed" in name else param.shape[1]
                param.copy_(noise / fan_in**0.5)
    model.save_pretrained(folder)
