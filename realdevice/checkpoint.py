"""Load a local Hugging Face checkpoint of the Llama family into the paged model.

A checkpoint is a folder with ``config.json`` and its weights in ``*.safetensors`` (one file, or
shards listed by ``model.safetensors.index.json``). Nothing is downloaded.

Supported ``architectures``: ``LlamaForCausalLM``, ``Qwen2ForCausalLM``, ``MistralForCausalLM``
(the last without a sliding window). ``config.json`` fields read: ``vocab_size``,
``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``
(grouped-query attention; default: ``num_attention_heads``), ``head_dim`` (default: hidden /
heads), ``intermediate_size``, ``rms_norm_eps``, ``hidden_act`` (``silu`` only),
``tie_word_embeddings``, ``attention_bias`` and ``mlp_bias`` (Llama), ``rope_theta`` and
``rope_scaling`` (or transformers 5's ``rope_parameters``) of type none / ``default``,
``linear`` or ``llama3``, ``sliding_window`` / ``use_sliding_window`` (must be off), and
``torch_dtype`` / ``dtype`` (the weights' dtype on CUDA). Qwen2 always has q/k/v biases.
Anything else in the config (token ids, ``max_position_embeddings``, ...) does not change the
forward pass and is ignored.

Every problem is a ``CheckpointError`` whose message is one sentence naming what is wrong.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import torch

from .config import ModelConfig, RopeScaling

ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM")
ROPE_TYPES = ("default", "linear", "llama3")
SAFETENSORS_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
}
CONFIG_DTYPES = ("float32", "bfloat16", "float16")


class CheckpointError(RuntimeError):
    """A checkpoint folder that cannot be loaded; the message names what is wrong."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    config: ModelConfig
    architecture: str
    dtype: str  # what config.json names (float32 when it names none)

    def weights(self) -> dict[str, torch.Tensor]:
        """Every tensor the model needs, under ``model.Transformer``'s parameter names."""
        wanted = parameter_names(self.config)
        found: dict[str, torch.Tensor] = {}
        for file in _weight_files(self.path):
            for name, tensor in read_safetensors(file, wanted).items():
                found[wanted[name]] = tensor
        missing = sorted(set(wanted.values()) - set(found))
        if missing:
            hf = {ours: theirs for theirs, ours in wanted.items()}
            raise CheckpointError(
                f"checkpoint {self.path}: the weights lack {hf[missing[0]]}"
                f" ({len(missing)} tensors missing)"
            )
        return found


def load(path) -> Checkpoint:
    """Read and check ``path``'s ``config.json`` (the weights are read by ``weights``)."""
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"--model {path}: no such checkpoint folder")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"checkpoint {path}: config.json is missing")
    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"checkpoint {path}: config.json is not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"checkpoint {path}: config.json is not a JSON object")
    architectures = raw.get("architectures") or []
    architecture = next((a for a in architectures if a in ARCHITECTURES), None)
    if architecture is None:
        raise CheckpointError(
            f"checkpoint {path}: architecture {', '.join(map(str, architectures)) or 'unnamed'} "
            f"is not supported (supported: {', '.join(ARCHITECTURES)})"
        )
    _weight_files(folder)  # a folder without weights fails here, before any model is built
    config = _model_config(folder, raw, architecture)
    dtype = str(raw.get("dtype") or raw.get("torch_dtype") or "float32")
    if dtype not in CONFIG_DTYPES:
        raise CheckpointError(
            f"checkpoint {path}: dtype {dtype} is not supported ({', '.join(CONFIG_DTYPES)})"
        )
    return Checkpoint(folder, config, architecture, dtype)


def _model_config(folder: Path, raw: dict, architecture: str) -> ModelConfig:
    def need(key: str) -> int:
        value = raw.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CheckpointError(
                f"checkpoint {folder}: config.json field {key} is missing or not a positive "
                f"integer (got {value!r})"
            )
        return value

    act = raw.get("hidden_act", "silu")
    if act != "silu":
        raise CheckpointError(f"checkpoint {folder}: hidden_act {act} is not supported (silu)")
    if raw.get("use_sliding_window") or (
        architecture == "MistralForCausalLM" and raw.get("sliding_window")
    ):
        raise CheckpointError(
            f"checkpoint {folder}: sliding-window attention is not supported (the paged model "
            "attends to the whole context)"
        )
    heads = need("num_attention_heads")
    kv_heads = raw.get("num_key_value_heads") or heads
    d_model = need("hidden_size")
    head_size = raw.get("head_dim") or 0
    if head_size == d_model // heads:
        head_size = 0
    rope, theta = _rope(folder, raw)
    qwen = architecture == "Qwen2ForCausalLM"
    try:
        return ModelConfig(
            name=folder.name,
            vocab=need("vocab_size"),
            d_model=d_model,
            layers=need("num_hidden_layers"),
            heads=heads,
            kv_heads=kv_heads,
            d_ff=need("intermediate_size"),
            rope_theta=theta,
            norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            head_size=head_size,
            qkv_bias=qwen or bool(raw.get("attention_bias")),
            out_bias=not qwen and bool(raw.get("attention_bias")),
            mlp_bias=bool(raw.get("mlp_bias")),
            tie_embeddings=bool(raw.get("tie_word_embeddings", False)),
            rope=rope,
            imitates=f"{architecture} from {folder.name}",
        )
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {folder}: {exc}") from None


def _rope(folder: Path, raw: dict) -> tuple[RopeScaling, float]:
    params = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise CheckpointError(f"checkpoint {folder}: rope_scaling is not a JSON object")
    theta = float(params.get("rope_theta", raw.get("rope_theta", 10000.0)))
    kind = params.get("rope_type") or params.get("type") or "default"
    if kind not in ROPE_TYPES:
        raise CheckpointError(
            f"checkpoint {folder}: RoPE scaling type {kind} is not supported "
            f"({', '.join(ROPE_TYPES)})"
        )
    if kind == "default":
        return RopeScaling(), theta
    try:
        factor = float(params["factor"])
        if kind == "linear":
            return RopeScaling("linear", factor), theta
        return RopeScaling(
            "llama3",
            factor,
            float(params["low_freq_factor"]),
            float(params["high_freq_factor"]),
            int(params["original_max_position_embeddings"]),
        ), theta
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"checkpoint {folder}: RoPE scaling {kind} lacks a valid field {exc}"
        ) from None


def parameter_names(config: ModelConfig) -> dict[str, str]:
    """Checkpoint tensor name -> ``model.Transformer`` parameter name, for ``config``."""
    names = {"model.embed_tokens.weight": "embed.weight", "model.norm.weight": "norm.weight"}
    if not config.tie_embeddings:
        names["lm_head.weight"] = "head.weight"
    attn = {"q_proj": "wq", "k_proj": "wk", "v_proj": "wv", "o_proj": "wo"}
    mlp = {"gate_proj": "gate", "up_proj": "up", "down_proj": "down"}
    for i in range(config.layers):
        hf, ours = f"model.layers.{i}.", f"blocks.{i}."
        names[hf + "input_layernorm.weight"] = ours + "attn_norm.weight"
        names[hf + "post_attention_layernorm.weight"] = ours + "mlp_norm.weight"
        for theirs, mine in attn.items():
            names[f"{hf}self_attn.{theirs}.weight"] = f"{ours}attn.{mine}.weight"
            biased = config.out_bias if mine == "wo" else config.qkv_bias
            if biased:
                names[f"{hf}self_attn.{theirs}.bias"] = f"{ours}attn.{mine}.bias"
        for theirs, mine in mlp.items():
            names[f"{hf}mlp.{theirs}.weight"] = f"{ours}mlp.{mine}.weight"
            if config.mlp_bias:
                names[f"{hf}mlp.{theirs}.bias"] = f"{ours}mlp.{mine}.bias"
    return names


def _weight_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            files = sorted({folder / name for name in weight_map.values()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(
                f"checkpoint {folder}: model.safetensors.index.json is unreadable ({exc})"
            ) from None
        absent = [f.name for f in files if not f.is_file()]
        if absent:
            raise CheckpointError(f"checkpoint {folder}: shard {absent[0]} is missing")
        return files
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"checkpoint {folder}: no *.safetensors weights")
    return files


def read_safetensors(file: Path, names) -> dict[str, torch.Tensor]:
    """The tensors of ``file`` whose names are in ``names``, on the CPU (memory-mapped).

    The format: an 8-byte little-endian header length, a JSON header mapping each name to its
    ``dtype``, ``shape`` and ``data_offsets`` (from the end of the header), then the raw data.
    """
    size = file.stat().st_size
    try:
        with file.open("rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            if header_len > size - 8:
                raise ValueError("header longer than the file")
            header = json.loads(f.read(header_len))
        data = torch.UntypedStorage.from_file(str(file), False, size)
        raw = torch.empty(0, dtype=torch.uint8).set_(data)
        out = {}
        for name, spec in header.items():
            if name == "__metadata__" or name not in names:
                continue
            dtype = SAFETENSORS_DTYPES.get(spec["dtype"])
            if dtype is None:
                raise ValueError(f"tensor {name} has dtype {spec['dtype']}")
            begin, end = (8 + header_len + o for o in spec["data_offsets"])
            if not 8 + header_len <= begin <= end <= size:
                raise ValueError(f"tensor {name} lies outside the file")
            chunk = raw[begin:end]
            if begin % dtype.itemsize:  # a view needs aligned data
                chunk = chunk.clone()
            out[name] = chunk.view(dtype).reshape(spec["shape"])
        return out
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, struct.error) as exc:
        raise CheckpointError(
            f"checkpoint file {file.name} is not valid safetensors ({exc})"
        ) from None
