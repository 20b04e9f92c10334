"""``--model FOLDER``: a Hugging Face checkpoint loaded into the paged model, proven equal to
``transformers`` itself.

Small random ``LlamaForCausalLM`` and ``Qwen2ForCausalLM`` models are built with
``transformers`` (GQA; llama3 / linear / no RoPE scaling; tied and untied embeddings; Qwen2's
q/k/v biases), saved with ``save_pretrained`` and loaded through ``realdevice.checkpoint``. The
runner's logits are compared with ``transformers``' forward over the same token ids: a whole
prompt, a prompt prefilled in chunks, decode steps across page boundaries in batches mixed with
other requests' decodes and prefill chunks, and a request recomputed after a preemption.
Tolerance: float32 on CPU, logits of order 1, max absolute difference ``LOGIT_ATOL``.
"""

from __future__ import annotations

import json

import pytest
from hf_tiny import CONFIGS, save_model

LOGIT_ATOL = 1e-4


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def checkpoint(request, tmp_path_factory):
    pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")
    folder = tmp_path_factory.mktemp(request.param)
    save_model(folder, request.param)
    return folder


def _reference(folder):
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype="float32")
    model.config._attn_implementation = "eager"
    return model.eval()


def _hf_logits(model, ids):
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()


def _runner(folder, attention, page_tokens=4):
    from realdevice.backend import RealDevice

    return RealDevice(
        str(folder),
        device="cpu",
        page_tokens=page_tokens,
        kv_pages=64,
        warmup=False,
        attention=attention,
    )


def _close(ours, theirs):
    assert ours.shape == theirs.shape
    diff = (ours - theirs).abs().max().item()
    assert diff <= LOGIT_ATOL, f"max |logit difference| {diff:.2e} > {LOGIT_ATOL}"


def _ids(executor, rid):
    state = executor.states[rid]
    return state.prompt + state.generated


@pytest.mark.parametrize("attention", ["exact", "padded"])
def test_checkpoint_logits_equal_transformers(checkpoint, torch_cpu, attention):
    from servesim import Batch, PrefillChunk

    hf = _reference(checkpoint)
    real = _runner(checkpoint, attention)
    assert real.config.tie_embeddings == hf.config.tie_word_embeddings
    ex = real.executor
    ex.add_request("whole", 13, 40)
    ex.add_request("chunked", 11, 40)
    ex.add_request("late", 9, 40)
    # a whole-prompt prefill
    ex.run(Batch(prefill=(PrefillChunk("whole", 13),)))
    _close(ex.last_logits["whole"], _hf_logits(hf, ex.states["whole"].prompt)[-1])
    # a prompt in chunks of 5, 5, 1, each batched with decodes of "whole"
    done = 0
    for chunk in (5, 5, 1):
        ex.run(Batch(decode=("whole",), prefill=(PrefillChunk("chunked", chunk),)))
        done += chunk
        prompt = ex.states["chunked"].prompt
        _close(ex.last_logits["chunked"], _hf_logits(hf, prompt[:done])[-1])
        _close(ex.last_logits["whole"], _hf_logits(hf, _ids(ex, "whole")[:-1])[-1])
    # decodes across page boundaries, in batches with another request's prefill chunks
    for step in range(9):
        prefill = (PrefillChunk("late", 3),) if step < 3 else ()
        ex.run(Batch(decode=("whole", "chunked"), prefill=prefill))
        for rid in ("whole", "chunked"):
            _close(ex.last_logits[rid], _hf_logits(hf, _ids(ex, rid)[:-1])[-1])
        if prefill:
            ids = ex.states["late"].prompt[: ex.states["late"].prefilled]
            _close(ex.last_logits["late"], _hf_logits(hf, ids)[-1])
    # a preempted request recomputes prompt + generated tokens, then decodes on
    generated = len(ex.states["chunked"].generated)
    ex.run(Batch(decode=("whole",), preempt=("chunked",)))
    recompute = 11 + generated
    ex.run(Batch(decode=("whole", "late"), prefill=(PrefillChunk("chunked", recompute),)))
    _close(ex.last_logits["chunked"], _hf_logits(hf, _ids(ex, "chunked")[:-1])[-1])
    for _ in range(3):
        ex.run(Batch(decode=("chunked", "whole", "late")))
        for rid in ("chunked", "whole", "late"):
            _close(ex.last_logits[rid], _hf_logits(hf, _ids(ex, rid)[:-1])[-1])


def test_run_gpu_takes_a_checkpoint_folder(unit, solution, torch_cpu, tmp_path):
    from realdevice.cli import main

    folder = tmp_path / "qwen"
    save_model(folder, "qwen2-bias-tied")
    out = tmp_path / "run.json"
    argv = ["--trace", "mixed", "--model", str(folder), "--output", str(out)]
    assert main(argv, policies_module=solution, lab_dir=unit.lab_dir) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    model = doc["runs"][0]["realDevice"]["model"]
    assert model["checkpoint"] == {"architecture": "Qwen2ForCausalLM", "dtype": "float32"}
    assert (model["d_model"], model["heads"], model["kv_heads"]) == (48, 6, 2)


def _broken(tmp_path, unit, solution, capsys, folder, expected):
    from realdevice.cli import main

    out = tmp_path / "run.json"
    argv = ["--trace", "mixed", "--model", str(folder), "--output", str(out)]
    assert main(argv, policies_module=solution, lab_dir=unit.lab_dir) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert not out.exists()


def test_bad_checkpoint_folders_get_one_sentence(unit, solution, torch_cpu, tmp_path, capsys):
    good = tmp_path / "good"
    save_model(good, "llama-llama3-rope")
    config = json.loads((good / "config.json").read_text(encoding="utf-8"))

    def variant(name, edit=None, drop=()):
        folder = tmp_path / name
        folder.mkdir()
        for f in good.iterdir():
            if f.name not in drop:
                (folder / f.name).write_bytes(f.read_bytes())
        if edit:
            (folder / "config.json").write_text(json.dumps({**config, **edit}), encoding="utf-8")
        return folder

    cases = [
        (tmp_path / "absent", "no such checkpoint folder"),
        (variant("noconfig", drop=("config.json",)), "config.json is missing"),
        (variant("noweights", drop=("model.safetensors",)), "no *.safetensors weights"),
        (variant("gpt2", {"architectures": ["GPT2LMHeadModel"]}), "GPT2LMHeadModel is not"),
        (
            variant("yarn", {"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}),
            "RoPE scaling type yarn is not supported",
        ),
        (variant("wide", {"hidden_size": 96, "head_dim": 16}), "has shape"),
        (variant("nolayers", {"num_hidden_layers": None}), "num_hidden_layers is missing"),
    ]
    truncated = variant("truncated")
    data = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) // 2])
    cases.append((truncated, "is not valid safetensors"))
    lacking = variant("lacking", {"num_hidden_layers": 3})
    cases.append((lacking, "the weights lack model.layers.2."))
    capsys.readouterr()  # transformers' progress bar
    for folder, expected in cases:
        _broken(tmp_path, unit, solution, capsys, folder, expected)
