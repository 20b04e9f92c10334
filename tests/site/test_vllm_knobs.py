"""The lesson's knob table names only engine arguments the pinned vLLM has (V1) or lacks (V0
arguments it lists because V1 has none), and only knobs the lab has. The pinned version's
field list is ``labs/unit08/vllm/engine_args.txt``, made by ``engine_args.py`` from vLLM's
own ``arg_utils.py`` (its header names the version and the file's SHA-256)."""

from __future__ import annotations

import re

import pytest
import yaml

from grader.plugins import load_file
from grader.units import REPO_ROOT

HERE = REPO_ROOT / "labs" / "unit08" / "vllm"


def fields() -> set[str]:
    lines = (HERE / "engine_args.txt").read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def knobs() -> list[dict]:
    return yaml.safe_load((HERE / "knobs.yaml").read_text(encoding="utf-8"))["knobs"]


def test_the_field_list_is_of_the_pinned_version():
    header = (HERE / "engine_args.txt").read_text(encoding="utf-8").splitlines()[0]
    module = load_file(HERE / "engine_args.py")
    assert header == f"# vLLM {module.VERSION}"
    # the version the peer scheduler and the benchmark that compares with it pin
    bench = (REPO_ROOT / "benchmarks" / "paged_vs_vllm.py").read_text(encoding="utf-8")
    assert f"vLLM {module.VERSION} " in bench
    assert len(fields()) > 100 and {"model", "max_num_seqs"} <= fields()


@pytest.mark.parametrize("knob", knobs(), ids=lambda k: k["lab"][0])
def test_every_v1_name_exists_and_every_v0_name_is_gone(knob):
    names = fields()
    assert knob["v1"] or knob.get("v0") or "note" in knob  # a knob without one says why
    for name in knob["v1"]:
        assert name in names, f"{name} is not an EngineArgs field of the pinned vLLM"
    for name in knob.get("v0", []):
        assert name not in names, f"{name} is listed as V0-only but the pinned vLLM has it"


def test_the_table_covers_the_knobs_the_issue_names():
    named = {n for k in knobs() for n in k["v1"] + k.get("v0", [])}
    wanted = {"max_num_batched_tokens", "max_num_seqs", "block_size", "gpu_memory_utilization"}
    wanted |= {"num_gpu_blocks_override", "long_prefill_token_threshold"}
    wanted |= {"preemption_mode", "swap_space"}
    assert wanted <= named


def test_every_lab_name_is_a_knob_of_the_lab():
    sources = ["servesim/runflags.py", "servesim/device.py", "servesim/swapping.py"]
    sources += ["starter/unit07/lab.json", "starter/unit08/lab.json"]
    text = "\n".join((REPO_ROOT / s).read_text(encoding="utf-8") for s in sources)
    for knob in knobs():
        for name in knob["lab"]:
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), name


def test_the_extractor_reads_engine_args_fields():
    module = load_file(HERE / "engine_args.py")
    source = (
        "class Other:\n    x: int = 1\n\nclass EngineArgs:\n    a: int = 1\n    b: str\n    c = 3\n"
    )
    assert module.engine_args(source) == ["a", "b"]
    with pytest.raises(ValueError):
        module.engine_args("class Other:\n    x: int\n")
