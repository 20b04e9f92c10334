"""A Hugging Face checkpoint folder is served with its own tokenizer: the prompt's token count
and the text that comes back are that tokenizer's (a character-level one, saved beside a tiny
random Llama by ``transformers``; nothing is downloaded)."""

from __future__ import annotations

import importlib.util

import pytest

from grader.serve.child import Served
from grader.units import REPO_ROOT
from grader.verify import verify_run

openai = pytest.importorskip("openai", reason="the openai client (extra 'test')")
pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")
transformers = pytest.importorskip("transformers", reason="transformers not installed")

CHARS = [chr(c) for c in range(32, 127)] + ["\n", "\t"]  # 97 ids: the tiny model's vocabulary


def checkpoint_with_tokenizer(folder) -> None:
    from tokenizers import Tokenizer, decoders, models

    spec = importlib.util.spec_from_file_location("hf_tiny", REPO_ROOT / "tests/runner/hf_tiny.py")
    hf_tiny = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hf_tiny)
    hf_tiny.save_model(folder, "llama-linear-rope-tied")
    vocab = {c: i for i, c in enumerate(CHARS)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="\t"))
    tok.decoder = decoders.Fuse()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="\t")
    fast.save_pretrained(folder)


def test_a_checkpoint_is_served_with_its_own_tokenizer(tmp_path):
    folder = tmp_path / "ckpt"
    checkpoint_with_tokenizer(folder)
    own = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    prompt = "héllo, checkpoint"  # é: one (unknown) id here, two bytes in a byte tokenizer
    served = Served(tmp_path, "unit07", "fcfs", "--model", str(folder), "--device", "cpu")
    try:
        api = openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0)
        reply = api.completions.create(model=str(folder), prompt=prompt, max_tokens=8)
    finally:
        code, err, doc = served.end()
    assert code == 0, err
    assert reply.usage.prompt_tokens == len(own.encode(prompt)) == len(prompt)  # one per char
    assert len(prompt.encode()) != len(prompt)
    text = reply.choices[0].text
    assert set(text) <= set(CHARS) and len(text) <= 8  # that vocabulary's characters
    assert reply.usage.completion_tokens == 8
    (run,) = doc["runs"]
    assert doc["trace"]["requests"][0]["inputTokens"] == len(prompt)
    assert run["realDevice"]["model"]["checkpoint"]["architecture"] == "LlamaForCausalLM"
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
