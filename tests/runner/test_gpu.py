"""GPU-only checks; CPU counterparts are in test_model.py and test_run_gpu.py."""

from __future__ import annotations

import json

import pytest

from grader.verify import verify_run


@pytest.fixture(scope="module")
def cuda(torch_cpu):
    if not torch_cpu.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
    return torch_cpu


def _tokens(device, dtype, chunk):
    from realdevice.backend import RealDevice
    from servesim import Batch, PrefillChunk

    real = RealDevice("tiny", device=device, dtype=dtype, page_tokens=4, kv_pages=64)
    real.executor.add_request("g", 13, 6)
    done = 0
    while done < 13:
        n = min(chunk, 13 - done)
        real.executor.run(Batch(prefill=(PrefillChunk("g", n),)))
        done += n
    logits = [real.executor.last_logits["g"].cpu()]
    for _ in range(5):
        real.executor.run(Batch(decode=("g",)))
        logits.append(real.executor.last_logits["g"].cpu())
    return real.executor.generated("g"), logits


@pytest.mark.parametrize("chunk", [1, 5, 13])
def test_cuda_float32_matches_cpu(cuda, chunk):
    cpu_tokens, cpu_logits = _tokens("cpu", "float32", chunk)
    gpu_tokens, gpu_logits = _tokens("cuda", "float32", chunk)
    assert gpu_tokens == cpu_tokens
    for a, b in zip(gpu_logits, cpu_logits, strict=True):
        assert (a - b).abs().max().item() <= 1e-3


def test_cuda_replay_uses_cuda_events_and_verifies(cuda, unit, solution, tmp_path):
    from realdevice.cli import main

    out = tmp_path / "gpu.json"
    argv = ["--trace", "mixed", "--device", "cuda", "--model", "small", "--output", str(out)]
    assert main(argv, policies_module=solution, lab_dir=unit.lab_dir) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    for run in doc["runs"]:
        assert run["realDevice"]["timing"] == "cuda-events"
        assert all(e["measuredMs"] > 0 for e in run["events"])
        assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
