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


def test_cuda_unit08_paged_runs_on_the_profiles_pages(cuda, tmp_path):
    """Unit 08 on a GPU (CPU twin: test_unit08_cli.py's every-policy test): the real pool is the
    profile's 64 pages and the run verifies with measured timing."""
    from realdevice.cli import main

    from grader import reference
    from grader.units import load_unit

    u08 = load_unit("unit08")
    out = tmp_path / "gpu08.json"
    argv = [
        "--trace",
        "lifo-victim",
        "--device-profile",
        str(u08.lab_dir / "devices" / "kv-64-pages.json"),
    ]
    argv += ["--budget", "64", "--policy", "paged", "--device", "cuda", "--output", str(out)]
    policies = reference.solution_policies(u08)
    assert main(argv, policies_module=policies, lab_dir=u08.lab_dir) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    (run,) = doc["runs"]
    assert run["realDevice"]["timing"] == "cuda-events"
    assert run["realDevice"]["kvCache"]["pages"] == 64
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
