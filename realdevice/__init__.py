"""realdevice: run the units' schedules on a real (small, randomly initialised) transformer.

Optional part of the lab: it needs PyTorch (``pip install 'infra-lab[runner]'`` or ``pip install
torch``); the simulator in ``servesim`` never imports it. Modules, one job each:

- ``config``: model sizes (``tiny`` for CPU tests up to ``medium`` for a GPU).
- ``model``: decoder-only transformer (RMSNorm, rotary positions, grouped-query attention,
  SwiGLU MLP) whose attention reads and writes a paged KV cache.
- ``kv_cache``: page pool with a capacity, one block table per request.
- ``host_pool``: host memory for swapped-out KV pages, and the copies both ways.
- ``executor``: runs one ``servesim.Batch`` (prefill chunks, decode steps) and picks greedy tokens.
- ``timing``: measures a submission (CUDA events on a GPU, a monotonic clock on CPU).
- ``backend``: model + cache + executor + timer behind the engine's ``execute`` hook.
- ``runner``: the ``replay`` and ``live`` modes, producing run-file entries.
- ``runsetup``: what one ``run_gpu.py`` call runs: the profile (the real cache is built from it),
  the trace, the policies with what the engine enforces for them.
- ``roofline``: decode throughput against the memory-bandwidth bound.
- ``calibrate``: the grid of step shapes and its measurement.
- ``fit``: the affine and the context-aware device model, fitted and held out.
- ``calibration``: one calibration end to end, its profile file and report.
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "realdevice needs PyTorch: pip install torch (or the project's 'runner' extra)"
    ) from exc

from .config import MODELS, ModelConfig
from .kv_cache import KVCacheFullError, PagedKVCache, PagePool

__all__ = ["MODELS", "KVCacheFullError", "ModelConfig", "PagePool", "PagedKVCache"]
