"""The job ``vs_vidur.py`` (and ``paged_fast.py``) run, and how a run of it is timed.

The job: the Azure conversation trace (ours as JSON, Vidur's as CSV), the affine A30/7B device
profile, unit 08's ``budgeted`` with a 512-token budget and 128 active sequences, and the flags
that make Vidur's ``run_vidur.py`` run the same. A lab folder with the reference solution runs
our side as a student's finished lab; ``run_child`` times one whole process (wall time, peak
RSS, CPU, page faults, context switches; ``timed_child`` the first two); ``busy`` loads the
machine; ``vidur_stats`` reads what Vidur printed.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from azure_trace import import_azure  # noqa: E402

SHARED = ROOT.parent / "shared"


DEFAULT_CSV = SHARED / "data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"


DEFAULT_PEER = SHARED / "peers/vidur"


PROFILE = {
    "prefillMsPerToken": 0.1,
    "decodeBatchMs": 20.0,
    "decodeMsPerSeq": 0.05,
    "overheadMs": 0.25,
    "maxActive": 128,
}


BUDGET = 512


VIDUR_FLAGS = [
    *("--replica_config_model_name", "meta-llama/Llama-2-7b-hf"),
    *("--replica_config_device", "a100"),
    *("--replica_config_network_device", "a100_pairwise_nvlink"),
    *("--replica_config_num_pipeline_stages", "1"),
    *("--replica_config_tensor_parallel_size", "1"),
    "--no-replica_config_enable_sequence_pipeline_parallel",
    *("--cluster_config_num_replicas", "1"),
    *("--request_generator_config_type", "trace_replay"),
    *("--trace_request_generator_config_date", "2023-11-16"),
    *("--trace_request_generator_config_prefill_scale_factor", "1"),
    *("--trace_request_generator_config_decode_scale_factor", "1"),
    *("--trace_request_generator_config_time_scale_factor", "1"),
    *("--trace_request_generator_config_max_tokens", "16384"),
    *("--replica_scheduler_config_type", "sarathi"),
    *("--sarathi_scheduler_config_chunk_size", str(BUDGET)),
    *("--sarathi_scheduler_config_batch_size_cap", str(PROFILE["maxActive"])),
    *("--sarathi_scheduler_config_num_blocks", "10000000"),
    "--no-metrics_config_write_json_trace",
    "--no-metrics_config_enable_chrome_trace",
    "--no-metrics_config_store_plots",
    "--no-metrics_config_save_table_to_wandb",
]


# the Vidur releases the job runs: release -> (peer script, its flags); 0.0.26 names the KV
# pool flag ``--cache_config_num_blocks`` (the peer README), everything else is the same
VIDUR_RELEASES = {
    "0.0.9": ("run_vidur.py", VIDUR_FLAGS),
    "0.0.26": (
        "run_vidur26.py",
        [
            "--cache_config_num_blocks" if f == "--sarathi_scheduler_config_num_blocks" else f
            for f in VIDUR_FLAGS
        ],
    ),
}


def vidur_command(release: str, python: str, peer: Path, table: Path, out: Path) -> list[str]:
    """The command that runs Vidur ``release`` (``VIDUR_RELEASES``) on the job."""
    script, flags = VIDUR_RELEASES[release]
    command = [python, str(peer / script), *flags]
    command += ["--trace_request_generator_config_trace_file", str(table)]
    return [*command, "--metrics_config_output_dir", str(out)]


def write_inputs(folder: Path, csv_path: Path, requests: int) -> tuple[Path, Path, Path, dict]:
    """The trace (ours and Vidur's CSV) and the device profile; returns their paths and doc."""
    doc = import_azure(csv_path, requests=requests)
    trace = folder / f"conv-{requests}.json"
    trace.write_text(json.dumps(doc), encoding="utf-8")
    table = folder / f"conv-{requests}.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["Date", "Time", "PromptTokenCount", "CompletionTokenCount"])
        for r in doc["requests"]:
            out.writerow(
                ["2023-11-16", r["arrivalMs"] / 1000.0, r["inputTokens"], r["outputTokens"]]
            )
    profile = folder / "profile.json"
    profile.write_text(json.dumps(PROFILE), encoding="utf-8")
    return trace, table, profile, doc


# the children's environment: bytecode caching on, as in a default Python setup
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass(frozen=True)
class ChildRun:
    """One whole process: wall seconds, peak RSS (MiB), stderr, and what the kernel counted
    for it (CPU seconds, minor page faults, voluntary and involuntary context switches)."""

    wall: float
    rss_mib: float
    stderr: str
    user: float
    sys: float
    minor_faults: int
    voluntary: int
    involuntary: int


def run_child(command: list[str], cwd: Path) -> ChildRun:
    """Run ``command`` and measure it (``ChildRun``). Exits on failure."""
    start = time.perf_counter()
    child = subprocess.Popen(
        command,
        cwd=cwd,
        env=CHILD_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(
            f"error: {' '.join(command[:4])} ... failed ({child.returncode}):\n{stderr[-2000:]}"
        )
    return ChildRun(
        wall,
        usage.ru_maxrss / 1024.0,
        stderr,
        usage.ru_utime,
        usage.ru_stime,
        usage.ru_minflt,
        usage.ru_nvcsw,
        usage.ru_nivcsw,
    )


def timed_child(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run ``command``; (wall seconds, peak RSS in MiB, stderr). Exits on failure."""
    run = run_child(command, cwd)
    return run.wall, run.rss_mib, run.stderr


@contextlib.contextmanager
def busy(count: int):
    """``count`` CPU-bound processes (a bare Python loop each) running beside the block: the
    benchmark's "loaded" machine. Each is ended by its own pid when the block ends."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], env=CHILD_ENV)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def lab_copy(folder: Path) -> Path:
    """A unit 08 lab folder with the reference policies, as a student's finished lab."""
    lab = folder / "lab08"
    if not lab.exists():
        from grader import labfolder
        from grader.units import load_unit

        labfolder.assemble(load_unit("unit08"), lab)
        for name in ("policies.py", "measure.py"):
            shutil.copyfile(ROOT / "solutions/unit08" / name, lab / name)
    return lab


def vidur_stats(stderr: str) -> dict | None:
    """The JSON line ``run_vidur.py`` prints: its phase times and step counts."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("{") and "loop_s" in line:
            return json.loads(line)
    return None
