"""What the sandbox is asked for (``Limits``) and what it hands back (``ChildResult``).

``ChildResult`` is built here from how a case ended (``Raw``) and the run file it left behind,
as the runner sent it (size-checked by ``protocol``).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

TIME_LIMITS = ("wall time", "CPU time")  # ``ChildResult.limit`` values that mean "too slow"


class SandboxError(RuntimeError):
    """The sandbox itself cannot run (not the submission's fault): grading must stop."""


@dataclass(frozen=True)
class Limits:
    """What one submission's child may use. ``wall_s`` bounds each case (from the moment the
    parent sends it), ``submission_s`` the whole submission (reruns in fresh children
    included): neither can be extended by anything the child does."""

    wall_s: float = 20.0
    submission_s: float = 300.0
    cpu_s: float = 10  # CPU seconds per case (the rlimit rounds up to whole seconds)
    compile_s: float = 2.0  # CPU seconds to compile each submission file, once per child
    memory_mb: int = 1024  # address space
    file_mb: int = 64  # largest file the child may write (stdout/stderr included)
    open_files: int = 64
    processes: int = 64  # tasks of the child's uid (only enforceable with a dedicated uid)
    output_mb: int = 16  # largest run file the parent reads back
    tmp_mb: int = 64  # size of the child's private /tmp (bubblewrap only)
    out_mb: int = 160  # size of the child's private /out tmpfs (bubblewrap only)
    one_child_per_case: bool = False  # grading: a fresh sandbox per case (slower)
    all_cases: bool = False  # run every case even after a policy timed out

    @property
    def disk_mb(self) -> int:
        """Most the child can write in all (bubblewrap: its two tmpfs)."""
        return self.tmp_mb + self.out_mb


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class ChildResult:
    returncode: int | None  # None when the child was killed for time
    stdout: str
    stderr: str
    timed_out: bool
    output: bytes | None  # the run file the child wrote, if any (and if it passed the checks)
    isolation: str  # which isolation mode ran, for every report
    signal: str | None = None  # e.g. "SIGXCPU" when the child died of a signal
    limit: str | None = None  # which limit stopped it: "wall time", "CPU time", "file size", ...
    output_error: str | None = None  # why an output that exists was rejected
    wall_s: float = 0.0
    skipped: str | None = None  # why the case was not run at all (then wall_s is 0)

    @property
    def out_of_time(self) -> bool:
        """Whether the child was stopped for time (wall clock or CPU), not for memory or files."""
        return self.timed_out or self.limit in TIME_LIMITS

    @property
    def summary(self) -> str:
        """One line on how the child ended, for feedback."""
        if self.skipped:
            return f"not run: {self.skipped}"
        if self.limit:
            return f"stopped by the sandbox: {self.limit} limit exceeded"
        if self.signal:
            return f"killed by {self.signal}"
        if self.output_error:
            return f"run file rejected: {self.output_error}"
        return f"exit status {self.returncode}"


@dataclass(frozen=True)
class Raw:
    """How the child process ended, before its files are read."""

    returncode: int | None
    timed_out: bool
    stdout: str
    stderr: str
    full: bool  # stdout or stderr reached the file-size limit
    wall_s: float


def which_limit(
    returncode: int | None, timed_out: bool, stderr: str, full: bool
) -> tuple[str | None, str | None]:
    """(signal name, limit hit) for a finished child; ``full``: stdout or stderr hit file_mb."""
    if timed_out:
        return None, "wall time"
    if returncode is None or returncode >= 0:
        if returncode and "MemoryError" in stderr:
            return None, "memory"
        if returncode and (full or "File too large" in stderr):  # Python ignores SIGXFSZ
            return None, "file size"
        return None, None
    sig = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else None
    by_signal = {"SIGXCPU": "CPU time", "SIGPROF": "CPU time", "SIGXFSZ": "file size"}
    limit = by_signal.get(sig or "")
    if sig == "SIGKILL":  # the hard CPU limit, or the kernel's OOM killer
        limit = "CPU time or memory"
    return sig, limit


def child_result(
    raw: Raw, isolation: str, data: bytes | None, output_error: str | None
) -> ChildResult:
    """The result of one case: how it ended (``raw``) and its run file (already bounded)."""
    sig, limit = which_limit(raw.returncode, raw.timed_out, raw.stderr, raw.full)
    return ChildResult(
        returncode=raw.returncode,
        stdout=raw.stdout,
        stderr=raw.stderr,
        timed_out=raw.timed_out,
        output=data,
        isolation=isolation,
        signal=sig,
        limit=limit,
        output_error=output_error,
        wall_s=raw.wall_s,
    )
