"""Several cases of one submission from ONE sandboxed child (``case_runner.py`` inside it).

The parent's side of the runner's protocol: each case (flags and trace) goes to the runner's
stdin only after the runner said ``done`` for the case before it; the results are read back
from the per-case files the runner leaves in the output folder, trusting none of them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import secrets
from dataclasses import dataclass
from pathlib import Path

from .host import current_plan
from .launch import launch
from .output import read_status, read_tail
from .results import DEFAULT_LIMITS, ChildResult, Limits, Raw, child_result

RUNNER = Path(__file__).with_name("case_runner.py")
RUNNER_NAME = "_infralab_runner.py"  # its name in the case folder


@dataclass(frozen=True)
class CaseRun:
    """One case of a batch: the trace file and the simulate.py flags (no --trace/--output)."""

    trace_path: Path
    argv: list[str]
    script: str = "simulate.py"  # or another given script of the lab folder (``--input``)


class Feed:
    """Batch runs: the parent hands the runner one case at a time over its stdin, and learns
    that a case is done from the runner's stdout (one line per case). A case's trace is sent
    only once the case before it has finished, so no case process ever holds a later case's
    trace; the wait loop in ``launch`` counts the finished cases (the wall limit then applies
    per case)."""

    def __init__(self, messages: list[bytes]):
        self.messages = messages
        self.sent = 0
        self.done = 0
        self.pending = b""
        self.closed = False
        self._lines = b""

    def advance(self) -> None:
        if self.sent == self.done and self.sent < len(self.messages):
            self.pending += self.messages[self.sent]
            self.sent += 1

    def heard(self, data: bytes) -> bool:
        """Progress lines from the runner; True when another case finished."""
        self._lines += data
        *lines, self._lines = self._lines.split(b"\n")
        before = self.done
        self.done = min(self.sent, self.done + sum(1 for line in lines if line == b"done"))
        return self.done > before

    @property
    def finished(self) -> bool:
        return self.done >= len(self.messages)


def run_cases(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    runs: list[CaseRun],
    limits: Limits = DEFAULT_LIMITS,
) -> list[ChildResult]:
    """Run several cases of one submission, in order, from ONE sandboxed child.

    Same isolation and limits as ``run_simulation``. The runner (``case_runner.py``) imports
    the lab once and forks one process per case; that process reads its case (flags and
    trace) from the parent over stdin, runs it with ``policies`` imported afresh and a CPU
    share of ``limits.cpu_s``, and exits with its real status. The case folder holds no
    trace, and a case's trace is sent only after the case before it finished, so a case never
    sees a later case's trace: give visible cases first and hidden ones after them. The parent
    trusts nothing the child writes beyond reading it safely; each run file is verified like
    any other. Should the child die, hang or be killed midway (``limits.wall_s`` without a
    finished case), the case it was on gets that fate and the cases after it run again in a
    fresh child, so each case's result does not depend on the others'.
    """
    results: list[ChildResult | None] = [None] * len(runs)
    pending = list(range(len(runs)))
    while pending:
        batch = _run_batch(lab_dir, submission_files, [runs[i] for i in pending], limits)
        for index, result in zip(pending, batch, strict=True):
            results[index] = result
        pending = [i for i in pending if results[i] is None]
    return results  # type: ignore[return-value]


def _run_batch(lab_dir, submission_files, runs: list[CaseRun], limits: Limits):
    """Results of the cases the child finished, the fate of the one it was on, None after."""
    plan = current_plan()
    names = [f"{secrets.token_hex(8)}-{n}" for n in range(len(runs))]
    cpu = max(0.05, float(limits.cpu_s))
    batch_limits = dataclasses.replace(limits, cpu_s=math.ceil(cpu * len(runs)) + 1)
    # kill(-1) is safe only alone in a PID namespace or under a dedicated uid
    leftovers = "kill" if plan.mode == "bwrap" or plan.drop_uid else "keep"

    def build(case: str, out: str) -> list[str]:
        return [RUNNER_NAME, out, repr(cpu), leftovers]

    messages = []
    for name, run in zip(names, runs, strict=True):
        body = {"argv": list(run.argv), "trace": Path(run.trace_path).read_text()}
        if run.script != "simulate.py":
            body["script"] = run.script
        body = json.dumps(body)
        body = body.encode()
        messages.append(b"case %d %s\n" % (len(body), name.encode()) + body)
    feed = Feed(messages)

    def collect(out: Path, raw: Raw, isolation: str) -> list[ChildResult | None]:
        results: list[ChildResult | None] = []
        cap = batch_limits.file_mb << 20
        for name in names:
            found, code = read_status(out / f"{name}.status")
            if not found:
                break
            stdout, out_size = read_tail(out / f"{name}.stdout")
            stderr, err_size = read_tail(out / f"{name}.stderr")
            full = max(out_size, err_size) >= cap
            case_raw = Raw(code, False, stdout, stderr, full, raw.wall_s)
            results.append(child_result(case_raw, isolation, out / f"{name}.json", limits))
        if len(results) < len(names):  # the case the child was on when it ended
            name = names[len(results)]
            stdout, _ = read_tail(out / f"{name}.stdout")
            stderr, _ = read_tail(out / f"{name}.stderr")
            case_raw = dataclasses.replace(raw, stdout=stdout, stderr=_join(stderr, raw.stderr))
            results.append(child_result(case_raw, isolation, out / f"{name}.json", limits))
        return results + [None] * (len(names) - len(results))

    extra = {RUNNER_NAME: RUNNER.read_bytes()}
    return launch(
        lab_dir,
        submission_files,
        extra=extra,
        build=build,
        collect=collect,
        limits=batch_limits,
        feed=feed,
    )


def _join(first: str, second: str) -> str:
    return "\n".join(part for part in (first, second) if part)
