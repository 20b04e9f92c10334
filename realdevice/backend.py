"""The real device behind the engine's ``execute`` hook: model, paged cache, executor, clock.

``RealDevice.execute(batch, context)`` runs the batch, records a ``Submission`` and returns the
measured duration in ms, which is exactly what ``servesim.simulate(..., execute=...)`` expects.
"""

from __future__ import annotations

import math
import platform
import time
from dataclasses import dataclass

import torch
from servesim.rules import StepTerms, step_terms, transfer_terms

from . import checkpoint
from .attention_plan import AttentionKind
from .config import MODELS, ModelConfig
from .executor import Executor
from .host_pool import HostPool
from .kv_cache import PagedKVCache
from .model import Transformer
from .timing import Stopwatch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEFAULT_KV_BUDGET_BYTES = {"cpu": 256 << 20, "cuda": 16 << 30}
WARMUP_ID = "__warmup__"


class TimeBudgetExceeded(RuntimeError):
    """``execute`` was called after ``RealDevice.deadline`` (a ``time.monotonic()`` value)."""


@dataclass(frozen=True)
class Submission:
    """One executed batch: its shape and what it cost."""

    batch: object  # the servesim.Batch
    context: dict  # cached positions of each request in the batch, before it ran
    terms: StepTerms  # what the device rules price: servesim.rules.step_terms(batch, context)
    measured_ms: float
    wall_ms: float
    pages_held: int = 0  # device KV pages in use after the step (finished requests released)
    host_pages_held: int = 0  # host pages swapped-out requests hold after the step


class RealDevice:
    def __init__(
        self,
        model: str | ModelConfig = "tiny",
        *,
        device: str = "cpu",
        dtype: str | None = None,
        page_tokens: int = 16,
        kv_pages: int | None = None,
        host_pages: int = 0,
        warmup: bool = True,
        attention: str = AttentionKind.EXACT,
    ):
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda: CUDA is not available on this machine")
        self.checkpoint = None
        if isinstance(model, str) and model not in MODELS:
            self.checkpoint = checkpoint.load(model)
        if self.checkpoint is not None:
            self.config = self.checkpoint.config
            on_cuda = self.checkpoint.dtype if self.device.type == "cuda" else "float32"
            self.dtype_name = dtype or on_cuda
        else:
            self.config = MODELS[model] if isinstance(model, str) else model
            self.dtype_name = dtype or ("bfloat16" if self.device.type == "cuda" else "float32")
        dt = DTYPES[self.dtype_name]
        if kv_pages is None:
            budget = DEFAULT_KV_BUDGET_BYTES.get(self.device.type, DEFAULT_KV_BUDGET_BYTES["cpu"])
            per_page = self.config.kv_bytes_per_token(torch.finfo(dt).bits // 8) * page_tokens
            kv_pages = max(1, budget // per_page)
        self.model = self._model(dt)
        self.cache = PagedKVCache(self.config, kv_pages, page_tokens, self.device, dt)
        host = HostPool(self.config, host_pages, self.cache) if host_pages else None
        self.executor = Executor(self.model, self.cache, self.device, host, attention)
        self.stopwatch = Stopwatch(self.device)
        self.submissions: list[Submission] = []
        self.deadline: float | None = None  # time.monotonic() after which execute refuses
        if warmup:
            self.warm_up()

    def _model(self, dtype) -> Transformer:
        if self.checkpoint is None:
            return Transformer.build(self.config, self.device, dtype)
        try:
            return Transformer.from_weights(
                self.config, self.checkpoint.weights(), self.device, dtype
            )
        except ValueError as exc:
            raise checkpoint.CheckpointError(f"checkpoint {self.checkpoint.path}: {exc}") from None

    def add_requests(self, requests) -> None:
        for request in requests:
            self.executor.add_request(
                request.id, request.input_tokens, request.output_tokens, request.prefix
            )

    def execute(self, batch, context) -> float:
        """Run ``batch`` for real; return its measured duration in ms (the engine's hook)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeBudgetExceeded("the time budget ran out")
        _, timing = self.stopwatch.time(lambda: self.executor.run(batch, context))
        members = {rid: context[rid] for rid in (*batch.ids, *batch.moved)}
        terms = step_terms(batch, members)
        if batch.moved:
            terms += transfer_terms(self.cache, batch, members)
        host = self.executor.host
        self.submissions.append(
            Submission(
                batch,
                members,
                terms,
                timing.device_ms,
                timing.wall_ms,
                self.cache.pool.used,
                host.pool.used if host else 0,
            )
        )
        if not (math.isfinite(timing.device_ms) and timing.device_ms > 0):
            raise RuntimeError(f"measured duration {timing.device_ms!r} ms is not positive")
        return timing.device_ms

    def warm_up(self) -> None:
        """Run a throwaway request so first-call costs (allocation, kernels) stay out of runs."""
        from servesim import Batch, PrefillChunk  # the lab package, on sys.path by now

        room = self.cache.pool.capacity * self.cache.page_tokens  # never more than the pool
        prompt = max(1, min(32, room // 2))
        steps = min(4, room - prompt)
        self.executor.add_request(WARMUP_ID, prompt, steps + 1)
        self.executor.run(Batch(prefill=(PrefillChunk(WARMUP_ID, prompt),)))
        for _ in range(steps):
            self.executor.run(Batch(decode=(WARMUP_ID,)))
        self.executor.outputs.pop(WARMUP_ID, None)
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def describe(self) -> dict:
        """Device and model, for the run file."""
        name = (
            torch.cuda.get_device_name(self.device)
            if self.device.type == "cuda"
            else platform.processor() or platform.machine()
        )
        return {
            "backend": self.device.type,
            "deviceName": name,
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "dtype": self.dtype_name,
            "timing": self.stopwatch.method,
            "model": {
                **self.config.to_json(),
                "checkpoint": None
                if self.checkpoint is None
                else {"architecture": self.checkpoint.architecture, "dtype": self.checkpoint.dtype},
            },
            "kvCache": {
                "pageTokens": self.cache.page_tokens,
                "pages": self.cache.pool.capacity,
                "hostPages": self.executor.host.pool.capacity if self.executor.host else 0,
            },
        }
