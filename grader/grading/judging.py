"""Judging under ceilings: every case's verdict is decided in a child of the trusted side with its
own CPU-time and memory limits, so no run file can make the grader itself slow or big.

    judge_cases(unit, jobs, limits=JudgeLimits()) -> list[Judged]

The run files are already bounded (``Limits.output_mb`` and the trace's cap, sizes checked
against the trace before anything is expanded: ``grader.verify.normalise``), but the checks are
Python code over untrusted data, and a bound that a future change breaks would otherwise take
the grader down with it. So the grader forks a judging child (it inherits the run files;
nothing is copied), which lowers its own address space to the grader's size plus
``memory_mb`` and judges the cases one at a time, each under ``case_cpu_s`` of CPU time
(``ITIMER_PROF``, with ``RLIMIT_CPU`` behind it), all of them under ``total_cpu_s``. The
public cases are judged first, then the hidden ones in a child of their own under a
``total_cpu_s`` of their own: no hidden case can change a public verdict. Each verdict comes
back as one length-prefixed frame the moment it is decided. A case that runs out of time or
memory gets an ``invalid_schedule`` verdict that says so; the cases after it are judged in a
fresh child while the judging time lasts, and get "not checked" after that. The parent waits
with a wall-clock deadline too, and kills a child that stops answering.
"""

from __future__ import annotations

import math
import os
import pickle
import resource
import select
import signal
import struct
import time
from dataclasses import dataclass, replace

from ..cases import Case
from ..sandbox import ChildResult
from ..units import Unit
from . import verdict_memo
from .hidden import Note
from .judge import judge
from .report import Status
from .verdict import Verdict

HEADER = struct.Struct("!Id")  # frame length, CPU seconds the case took
MAX_FRAME = 1 << 20  # a pickled verdict is a few KiB: its texts are cut below
MAX_SUMMARY, MAX_DETAIL = 1000, 16000  # characters kept of a verdict's texts
MIN_SLICE_S = 0.05  # no case is started with less judging time than this left
OUT_OF_TIME = Note.CHECK_TIME.value
OUT_OF_MEMORY = Note.CHECK_MEMORY.value
NOT_CHECKED = Note.NOT_CHECKED.value


@dataclass(frozen=True)
class JudgeLimits:
    case_cpu_s: float = 20.0  # CPU seconds to judge one case
    total_cpu_s: float = 60.0  # CPU seconds to judge a submission's public cases (and hidden)
    memory_mb: int = 2048  # address space the judging child may add to the grader's
    wall_per_cpu: float = 4.0  # wall seconds the parent waits per CPU second (busy hosts)


@dataclass(frozen=True)
class JudgeJob:
    case: Case
    trace_doc: dict
    golden: dict
    child: ChildResult


@dataclass(frozen=True)
class Judged:
    verdict: Verdict
    cpu_s: float  # CPU time the judging took (0 when not judged)


class _CaseTimeout(BaseException):
    """Raised by SIGPROF in the judging child: derives from BaseException so that no
    ``except`` of the checks can swallow it."""


def judge_cases(unit: Unit, jobs: list[JudgeJob], limits: JudgeLimits | None = None) -> list:
    """The verdict of every job, in order, each judged under the ceilings of ``limits``.

    Public cases are judged first, in judging children of their own and under a total of their
    own (``total_cpu_s`` each for the public and for the hidden cases): nothing a hidden case's
    run file does (the time its checks take, a judging child it makes run out of memory) can
    change a public case's verdict, whatever order ``jobs`` come in."""
    limits = limits or JudgeLimits()
    warm(unit, [job.case for job in jobs])
    judged: list[Judged | None] = [None] * len(jobs)
    for hidden in (False, True):
        tier = [n for n, job in enumerate(jobs) if job.case.hidden is hidden]
        for n, one in zip(tier, _judge_tier(unit, [jobs[n] for n in tier], limits), strict=True):
            judged[n] = one
    return judged


def _judge_tier(unit: Unit, jobs: list[JudgeJob], limits: JudgeLimits) -> list[Judged]:
    """Every job's verdict, in order, all of them under ``limits.total_cpu_s``.

    A job whose run file was judged before (``verdict_memo``, only inside a batch's
    ``remembered``) takes that verdict and is charged the CPU time it took then; the jobs
    between two such are judged in a child as always."""
    known = [verdict_memo.lookup(unit, job) for job in jobs]
    judged: list[Judged] = []
    while len(judged) < len(jobs):
        spent = sum(j.cpu_s for j in judged)
        left = limits.total_cpu_s - spent
        if left <= MIN_SLICE_S:
            rest = len(jobs) - len(judged)
            judged += [
                Judged(Verdict(Status.INVALID_SCHEDULE, Note.NOT_CHECKED), 0.0) for _ in range(rest)
            ]
            break
        start = len(judged)
        if known[start] is not None:
            judged.append(Judged(*known[start]))
            continue
        end = next((n for n in range(start, len(jobs)) if known[n] is not None), len(jobs))
        judged += _one_child(unit, jobs[start:end], limits, left)
    return judged


def warm(unit: Unit, cases: list[Case]) -> None:
    """Import and build everything the checks use before forking: a module imported for the
    first time in the child could find a lock held by a thread that the fork did not copy.
    What is built here (the schema's checks, the cases' devices) is built once per grader
    process, not once per judging child."""
    from servesim import compact, metrics  # noqa: F401

    from ..course.golden import case_device_json
    from ..verify import replay_run  # noqa: F401
    from ..verify.runschema import validate_run_file

    validate_run_file(unit, {})
    for case in cases:
        case_device_json(unit, case)


def _one_child(unit: Unit, jobs: list[JudgeJob], limits: JudgeLimits, left_s: float) -> list:
    """Judge ``jobs`` in one forked child until it finishes, dies or runs out of time; the
    verdicts it sent, plus one for the case it was judging when it stopped."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the judging child: never returns
        os.close(read_fd)
        _child_main(unit, jobs, limits, left_s, write_fd)
    os.close(write_fd)
    judged: list[Judged] = []
    late = True  # until the child is known to have ended by itself
    try:
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            while len(judged) < len(jobs) and left_s > MIN_SLICE_S:
                deadline = time.monotonic() + min(limits.case_cpu_s, left_s) * limits.wall_per_cpu
                frame = _read_frame(pipe, deadline + 5)
                if frame is None:
                    late = time.monotonic() >= deadline + 5
                    break
                judged.append(frame)
                left_s -= frame.cpu_s
            else:
                late = False
    finally:
        status = _reap(pid, kill=late)
    if len(judged) < len(jobs) and left_s > MIN_SLICE_S:  # it died or stopped mid-case
        why = Note.CHECK_TIME if _cpu_signal(status) else Note.CHECK_MEMORY
        spent = min(limits.case_cpu_s, max(left_s, 0.0))
        judged.append(Judged(Verdict(Status.INVALID_SCHEDULE, why), spent))
    return judged


def _child_main(unit, jobs, limits: JudgeLimits, left_s: float, write_fd: int) -> None:
    code = 0
    try:
        signal.signal(signal.SIGPROF, _on_prof)
        _lower_limits(limits, left_s)
        with os.fdopen(write_fd, "wb", buffering=0) as pipe:
            for job in jobs:
                if left_s <= MIN_SLICE_S:  # the submission's time is used up: the parent says so
                    break
                verdict, cpu_s = _judge_one(unit, job, limits, left_s)
                pipe.write(_frame(verdict, cpu_s))
                left_s -= cpu_s
    except BaseException:  # the parent reports the verdicts that are missing
        code = 1
    finally:
        os._exit(code)


def _judge_one(unit: Unit, job: JudgeJob, limits: JudgeLimits, left_s: float):
    """One verdict and the CPU time it is charged (its whole share when it ran out of time)."""
    started, share = time.process_time(), min(limits.case_cpu_s, left_s)
    signal.setitimer(signal.ITIMER_PROF, share)
    try:
        verdict = judge(unit, job.case, job.trace_doc, job.golden, job.child)
        signal.setitimer(signal.ITIMER_PROF, 0)  # inside the try: a late SIGPROF is caught
    except _CaseTimeout:
        verdict = Verdict(Status.INVALID_SCHEDULE, Note.CHECK_TIME)
        return verdict, max(share, time.process_time() - started)
    return verdict, time.process_time() - started


def _on_prof(signum, frame):
    raise _CaseTimeout


def _lower_limits(limits: JudgeLimits, left_s: float) -> None:
    """This process's address space: its size now plus ``memory_mb``; its CPU time: what is
    left of the submission's, plus a second (SIGXCPU if the timer is ever missed)."""
    size = _address_space()
    if size:
        cap = size + (limits.memory_mb << 20)
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or cap < hard:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(used.ru_utime + used.ru_stime + left_s) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or cpu < hard:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _address_space() -> int:
    """Bytes of this process's address space (VmSize), 0 when unknown."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _frame(verdict: Verdict, cpu_s: float) -> bytes:
    verdict = replace(
        verdict, public=verdict.public[:MAX_SUMMARY], detail=verdict.detail[:MAX_DETAIL]
    )
    body = pickle.dumps(verdict, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body), cpu_s) + body


def _read_frame(pipe, deadline: float) -> Judged | None:
    """One verdict frame, or None when the child ended, broke the format or missed the
    deadline."""
    header = _read_exact(pipe, HEADER.size, deadline)
    if header is None:
        return None
    length, cpu_s = HEADER.unpack(header)
    if length > MAX_FRAME or not math.isfinite(cpu_s):
        return None
    body = _read_exact(pipe, length, deadline)
    if body is None:
        return None
    verdict = pickle.loads(body)  # written by the grader's own child, never by a submission
    return Judged(verdict, max(0.0, cpu_s)) if isinstance(verdict, Verdict) else None


def _read_exact(pipe, size: int, deadline: float) -> bytes | None:
    data = b""
    while len(data) < size:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([pipe], [], [], wait)[0]:
            return None
        chunk = pipe.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _reap(pid: int, kill: bool) -> int:
    """Wait for the judging child, first killing it when it stopped answering; its status."""
    if kill:
        os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def _cpu_signal(status: int) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL)
