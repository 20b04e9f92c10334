"""Run one simulation of an untrusted submission in a child process, away from the grader's files.

Interface used by grading (keep it stable):

    run_simulation(lab_dir, submission_files, trace_path, argv, limits) -> ChildResult
    run_cases(lab_dir, submission_files, runs, limits) -> list[ChildResult]
    warm_template(lab_dir)  # once, before a batch forks its workers

Per call, a fresh private temp folder gets the lab folder's pristine files (its ``tests`` left
out; hard links to a read-only template built once per batch, or a copy), the student's
editable files and the runner (``case_runner.py``, with ``compile_budget.py``); the cases'
traces are sent to it one at a time. It runs in a child process that is, depending on what the
host allows (see ``docs/sandbox.md``):

- ``bwrap``: inside bubblewrap (``--unshare-all``: no network, own PID/IPC/UTS namespaces), with
  only the Python install, ``/usr`` and the case folder bound read-only and size-capped tmpfs
  for ``/tmp`` and the output folder; nothing else of the host (the course repo included)
  exists in its file system;
- ``rlimits``: the fallback, a plain child process; refused unless the grader is root (a
  dedicated uid) and the hidden material is private (``require_safe_isolation``).

In both modes the child gets rlimits (CPU seconds, address space, file size, open files,
processes), a scrubbed environment, wall-clock deadlines per case and per submission that the
parent alone keeps, and, when the grader runs as root, a dedicated unprivileged uid (reserved
with a lock across grader processes, so no two children on the host share one) under which
every leftover process is killed afterwards. The mode that ran is in every
``ChildResult.isolation`` ("bwrap+uid", "bwrap", "rlimits+uid").

Each case's results (exit status, stdout/stderr tails, run file) come back over the runner's
stdout in one frame whose every length the parent bounds, before the next case is sent; the
parent never reads files the child could still change. Nothing the child sent is trusted
beyond that: verification happens in the parent.

Modules, one job each: ``results`` (Limits, ChildResult, how a child ended), ``host`` (isolation
mode, interpreter, refusal of weak modes), ``bwrap`` (the bubblewrap command line), ``uids``
(the dedicated uid, its lock and its leftovers), ``rlimits`` (limits and uid applied at exec),
``launch`` (one child, start to end), ``template`` (the pristine case folder with the lab's
bytecode, built once per batch), ``protocol`` (the runner's messages and frames), ``session``
(one conversation with the runner, with the parent's deadlines), ``output`` (stdout/stderr
tails), ``simulation`` (``run_simulation``), ``multicase`` (``run_cases``; ``case_runner.py`` is
its half inside the sandbox, ``compile_budget.py`` what that half compiles the submission with).
"""

from .bwrap import CASE_DIR, OUT_DIR
from .host import MODE_ENV, isolation_mode, reachable_by_others, require_safe_isolation, scratch_dir
from .host import plan as _plan
from .host import world_usable as _world_usable
from .multicase import CaseRun, run_cases
from .output import OUTPUT_LIMIT
from .results import ChildResult, Limits, SandboxError
from .simulation import run_simulation
from .template import warm as warm_template
from .uids import UID_RANGE

__all__ = [
    "CASE_DIR",
    "MODE_ENV",
    "OUTPUT_LIMIT",
    "OUT_DIR",
    "UID_RANGE",
    "CaseRun",
    "ChildResult",
    "Limits",
    "SandboxError",
    "_plan",
    "_world_usable",
    "isolation_mode",
    "reachable_by_others",
    "require_safe_isolation",
    "run_cases",
    "run_simulation",
    "scratch_dir",
    "warm_template",
]
