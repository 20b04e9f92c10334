"""Several cases of one submission from ONE sandboxed child (``case_runner.py`` inside it).

The parent sends a case, gets that case's whole result back in one bounded frame (the runner
has already deleted its files by then), and only then sends the next case: a later case can
neither read nor rewrite an earlier one's results, and never sees a later case's trace. The
deadlines are the parent's (``session``); results are built here, trusting nothing.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from .launch import launch
from .output import OUTPUT_LIMIT, cut_note
from .protocol import Frame, FrameReader, case_message
from .results import DEFAULT_LIMITS, ChildResult, Limits, Raw, child_result
from .session import Session

HERE = Path(__file__).parent
RUNNER_NAME = "_infralab_runner.py"  # case_runner.py's name in the case folder
RUNNER_FILES = {  # name in the case folder -> the source beside this module
    RUNNER_NAME: "case_runner.py",
    "_infralab_compile_budget.py": "compile_budget.py",  # the runner imports it by this name
}
SKIPPED_DEADLINE = "the submission's time limit was used up"  # ``ChildResult.skipped``
SKIPPED_POLICY = "this policy ran out of time on an earlier case"  # ... starts with one of these


@dataclass(frozen=True)
class CaseRun:
    """One case: the trace file and the simulate.py flags (no --trace/--output).

    ``group`` (grading: the policy) names cases that share a fate: once one of them runs out
    of time, the others are not run (``Limits.all_cases`` runs them anyway). ``output_cap``:
    the largest run file accepted for this case (default ``Limits.output_mb``).
    """

    trace_path: Path
    argv: list[str]
    group: str | None = None
    output_cap: int | None = None
    script: str = "simulate.py"  # or another given script of the lab folder (``--input``)


def run_cases(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    runs: list[CaseRun],
    limits: Limits = DEFAULT_LIMITS,
) -> list[ChildResult]:
    """Run several cases of one submission, in order, from one sandboxed child.

    Each case gets a CPU share of ``limits.cpu_s`` and ``limits.wall_s`` of wall time from the
    moment it is sent; the whole submission ``limits.submission_s``. Should the child die or
    be stopped midway, the case it was on gets that fate and the cases after it run in a fresh
    child while the submission's time lasts; cases not run get a result saying why
    (``ChildResult.skipped``). Raises ``SandboxError`` only when no child can start.
    """
    results: list[ChildResult | None] = [None] * len(runs)
    deadline = time.monotonic() + limits.submission_s
    timed_out: dict[str, ChildResult] = {}
    pending = list(range(len(runs)))
    while pending:
        if time.monotonic() >= deadline:
            for index in pending:
                results[index] = _skipped(SKIPPED_DEADLINE, limits)
            break
        _run_batch(lab_dir, submission_files, runs, pending, limits, deadline, results, timed_out)
        pending = [i for i in pending if results[i] is None]
    return results  # type: ignore[return-value]


def _run_batch(lab_dir, files, runs, pending, limits, deadline, results, timed_out) -> None:
    """One child over the ``pending`` cases; fills ``results`` for those it settled."""
    names = {i: f"{secrets.token_hex(8)}-{i}" for i in pending}
    cpu = max(0.05, float(limits.cpu_s))
    run_cap = max(_cap(runs[i], limits) for i in pending)
    session = Session(
        messages={
            i: case_message(names[i], runs[i].trace_path, runs[i].argv, runs[i].script)
            for i in pending
        },
        groups={i: None if limits.all_cases else runs[i].group for i in pending},
        reader=FrameReader(run_cap, OUTPUT_LIMIT),
        wall_s=limits.wall_s,
        deadline=deadline,
        timed_out_groups=set(timed_out),
    )
    batch_limits = dataclasses.replace(limits, cpu_s=math.ceil(cpu * len(pending)) + 1)

    def build(case: str, out: str) -> list[str]:
        caps = [str(run_cap), str(OUTPUT_LIMIT), repr(float(limits.compile_s))]
        return [RUNNER_NAME, out, repr(cpu), *caps, *sorted(files)]

    raw = launch(
        lab_dir,
        files,
        extra={name: HERE.joinpath(source).read_bytes() for name, source in RUNNER_FILES.items()},
        build=build,
        limits=batch_limits,
        session=session,
    )
    isolation = _isolation()
    for index, answer in session.answers.items():
        cap = _cap(runs[index], limits)
        result = _from_frame(answer.frame, answer.wall_s, isolation, limits, cap)
        results[index] = result
        if result.out_of_time and session.groups.get(index):
            timed_out.setdefault(session.groups[index], result)
    if session.current is not None:
        results[session.current] = _fate(raw, session, isolation)
        group = session.groups.get(session.current)
        if group and results[session.current].out_of_time:
            timed_out.setdefault(group, results[session.current])
    for index in pending:
        group = session.groups.get(index)
        if results[index] is None and group in timed_out:
            results[index] = _skipped(
                f"{SKIPPED_POLICY} ({timed_out[group].summary})",
                limits,
                like=timed_out[group],
            )


def _cap(run: CaseRun, limits: Limits) -> int:
    return min(run.output_cap or (limits.output_mb << 20), limits.output_mb << 20)


def _isolation() -> str:
    from .host import current_plan

    return current_plan().isolation


def _from_frame(frame: Frame, wall_s: float, isolation: str, limits: Limits, cap: int):
    """A case the runner answered for."""
    stdout = cut_note(frame.stdout, frame.stdout_size)
    stderr = cut_note(frame.stderr, frame.stderr_size)
    full = max(frame.stdout_size, frame.stderr_size) >= limits.file_mb << 20
    raw = Raw(frame.code, False, stdout, stderr, full, wall_s)
    output, error = frame.output, frame.output_error
    if output is not None and len(output) > cap:
        output, error = None, "larger than the cap for this trace"
    return child_result(raw, isolation, output, error)


def _fate(raw: Raw, session: Session, isolation: str) -> ChildResult:
    """The case in flight when the child ended: stopped for time, or the runner broke."""
    wall = max(0.0, time.monotonic() - session.sent_at)
    stderr = raw.stderr
    if session.broken:
        stderr = f"the sandboxed runner broke its protocol ({session.broken})\n{stderr}"
    elif not raw.timed_out:
        stderr = f"the sandboxed runner ended during this case\n{stderr}"
    case_raw = dataclasses.replace(raw, stderr=stderr, wall_s=wall)
    if not raw.timed_out and case_raw.returncode == 0:
        case_raw = dataclasses.replace(case_raw, returncode=1)
    return child_result(case_raw, isolation, None, None)


def _skipped(why: str, limits: Limits, like: ChildResult | None = None) -> ChildResult:
    """A case that was not run: it shares the fate of ``like`` (a timeout), if given."""
    return ChildResult(
        returncode=None,
        stdout="",
        stderr="",
        timed_out=True,
        output=None,
        isolation=like.isolation if like else _isolation(),
        limit=like.limit if like and like.limit else "wall time",
        skipped=why,
    )
