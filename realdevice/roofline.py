"""Decode throughput against the memory-bandwidth roofline.

A decode step of B sequences reads every weight once (the embedding table aside: one row per
token) and each sequence's cached K and V; at a memory bandwidth W that takes at least
``(weight bytes + cached positions x KV bytes per position) / W``, so the step can give at most
B tokens in that time. ``decode_point`` times decode steps of B sequences at a context C on the
real device (through ``calibrate.measure``, so they are ordinary submissions) and sets the
measured tokens per second against that bound. ``bandwidth`` is the nominal HBM bandwidth of
a GPU it knows by name, else a copy measured on the device (bytes read + written per second).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import torch

from .calibrate import Grid, Shape, measure

# Nominal HBM bandwidth (GB/s) by a distinctive part of torch.cuda.get_device_name(); the
# first match wins, so the more specific names come first.
NOMINAL_GBPS = (
    ("H200", 4800.0),
    ("H100 PCIe", 2000.0),
    ("H100", 3350.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100", 1555.0),
    ("L40S", 864.0),
    ("A10G", 600.0),
    ("L4", 300.0),
    ("T4", 320.0),
)


@dataclass(frozen=True)
class Bandwidth:
    gbps: float
    source: str  # "nominal <name>" or "measured copy"


@dataclass(frozen=True)
class DecodePoint:
    sequences: int
    context: int
    step_ms: float  # median measured decode step
    tokens_per_s: float
    roofline_tokens_per_s: float
    bytes_per_step: int

    @property
    def fraction(self) -> float:
        return self.tokens_per_s / self.roofline_tokens_per_s

    def to_json(self) -> dict:
        return asdict(self) | {"fractionOfRoofline": self.fraction}


def bandwidth(real, copy_mib: int = 256) -> Bandwidth:
    """The device's memory bandwidth: nominal for a known GPU, else a measured copy."""
    if real.device.type == "cuda":
        name = torch.cuda.get_device_name(real.device)
        for part, gbps in NOMINAL_GBPS:
            if part in name:
                return Bandwidth(gbps, f"nominal {part}")
    return Bandwidth(_copy_gbps(real.device, copy_mib), "measured copy")


def _copy_gbps(device, mib: int, repeats: int = 5) -> float:
    source = torch.ones(mib << 18, dtype=torch.float32, device=device)  # mib MiB
    target = torch.empty_like(source)
    rates = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        target.copy_(source)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        rates.append(2 * source.numel() * 4 / (time.perf_counter() - start) / 1e9)
    return statistics.median(rates)


def step_bytes(real, sequences: int, context: int) -> int:
    """Bytes a decode step must read at least: the weights (but the embedding table, unless the
    output head shares it) and the cached K and V of every sequence."""
    config = real.config
    element = torch.finfo(real.cache.k.dtype).bits // 8
    lookup_only = 0 if config.tie_embeddings else config.vocab * config.d_model
    weights = (config.parameters - lookup_only) * element
    return weights + sequences * context * config.kv_bytes_per_token(element)


def decode_point(real, sequences: int, context: int, band: Bandwidth, steps: int = 5):
    """Measured decode throughput of ``sequences`` at ``context`` and its roofline bound."""
    samples, _ = measure(real, Grid((Shape(sequences, context),), repeats=1, decode_steps=steps))
    step_ms = statistics.median(s.measured_ms for s in samples)
    needed = step_bytes(real, sequences, context + steps // 2)
    roofline_s = needed / (band.gbps * 1e9)
    return DecodePoint(
        sequences, context, step_ms, 1000.0 * sequences / step_ms, sequences / roofline_s, needed
    )


@dataclass(frozen=True)
class PrefillPoint:
    tokens: int  # one prompt of this many tokens, prefilled in one chunk
    step_ms: float  # median measured step
    tokens_per_s: float

    def to_json(self) -> dict:
        return asdict(self)


def prefill_point(real, tokens: int, repeats: int = 3) -> PrefillPoint:
    """Measured prefill throughput: one fresh prompt of ``tokens`` in one chunk."""
    samples, _ = measure(real, Grid((Shape(chunks=((tokens, 0),)),), repeats=repeats))
    step_ms = statistics.median(s.measured_ms for s in samples)
    return PrefillPoint(tokens, step_ms, 1000.0 * tokens / step_ms)
