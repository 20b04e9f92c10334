"""Run one simulation of an untrusted submission in a child process, away from the grader's files.

Interface used by grading (keep it stable):

    run_simulation(lab_dir, submission_files, trace_path, argv, limits) -> ChildResult

Per call, a fresh private temp folder gets a pristine copy of the lab folder (its ``tests``
left out), the student's editable files and the one trace. ``simulate.py`` runs there in a child
process that is, depending on what the host allows (see ``docs/sandbox.md``):

- ``bwrap``: inside bubblewrap (``--unshare-all``: no network, own PID/IPC/UTS namespaces), with
  only the Python install, ``/usr`` and the case folder bound read-only and one writable output
  folder; nothing else of the host (the course repo included) exists in its file system;
- ``rlimits``: the fallback, a plain child process.

In both modes the child gets rlimits (CPU seconds, address space, file size, open files,
processes), a scrubbed environment, a wall-clock timeout that kills its whole session, and, when
the grader runs as root, a dedicated unprivileged uid (fresh per call, so concurrent cases cannot
see or signal each other) under which every leftover process is killed afterwards. The mode that
ran is in every ``ChildResult.isolation`` ("bwrap+uid", "bwrap", "rlimits+uid", "rlimits").

The child writes its run file to a random path it is told on the command line; the parent opens
that path without following links, accepts only a regular file up to ``Limits.output_mb`` and
reads it. Nothing the child wrote is trusted beyond that: verification happens in the parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import json
import math
import os
import resource
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

OUTPUT_LIMIT = 64 * 1024  # characters of stdout/stderr kept for feedback
MODE_ENV = "INFRALAB_SANDBOX"  # "auto" (default), "bwrap" (required) or "rlimits" (fallback)
UID_RANGE = (200_000, 260_000)  # dedicated child uids (no passwd entry needed)
CASE_DIR = "/lab"  # where the case folder appears inside bubblewrap
OUT_DIR = "/out"
PR_SET_CHILD_SUBREAPER = 36


class SandboxError(RuntimeError):
    """The sandbox itself cannot run (not the submission's fault): grading must stop."""


@dataclass(frozen=True)
class Limits:
    wall_s: float = 20.0
    cpu_s: float = 10  # CPU seconds per case (the rlimit rounds up to whole seconds)
    memory_mb: int = 1024  # address space
    file_mb: int = 64  # largest file the child may write (stdout/stderr included)
    open_files: int = 64
    processes: int = 64  # tasks of the child's uid (only enforceable with a dedicated uid)
    output_mb: int = 16  # largest run file the parent reads back
    tmp_mb: int = 64  # size of the child's private /tmp (bubblewrap only)
    one_child_per_case: bool = False  # grading: a fresh sandbox per case (slower)


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

    @property
    def summary(self) -> str:
        """One line on how the child ended, for feedback."""
        if self.limit:
            return f"stopped by the sandbox: {self.limit} limit exceeded"
        if self.signal:
            return f"killed by {self.signal}"
        if self.output_error:
            return f"run file rejected: {self.output_error}"
        return f"exit status {self.returncode}"


# --- the host: what can run here ------------------------------------------------------------


@dataclass(frozen=True)
class _Interpreter:
    path: str
    prefix: str  # sys.base_prefix of that interpreter


@dataclass(frozen=True)
class _Plan:
    mode: str  # "bwrap" or "rlimits"
    drop_uid: bool
    python: _Interpreter
    bwrap: str | None


def _world_usable(path: str) -> bool:
    """Whether any user may reach and execute ``path`` (every parent dir o+x, file o+rx)."""
    path = os.path.realpath(path)
    parts = Path(path).parents
    try:
        if any(not os.stat(p).st_mode & stat.S_IXOTH for p in parts):
            return False
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IXOTH and mode & stat.S_IROTH)


def _candidates() -> list[str]:
    found = [os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)]
    for name in ("/usr/bin/python3", shutil.which("python3") or "", "/usr/local/bin/python3"):
        if name and os.path.exists(name) and os.path.realpath(name) not in found:
            found.append(os.path.realpath(name))
    return found


def _probe_interpreter(path: str) -> _Interpreter | None:
    code = "import sys; print(sys.version_info >= (3, 11)); print(sys.base_prefix)"
    try:
        done = subprocess.run(
            [path, "-I", "-S", "-c", code],
            capture_output=True,
            text=True,
            timeout=20,
            env={},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2 or lines[0] != "True":
        return None
    return _Interpreter(path, lines[1])


@functools.cache
def _plan(requested: str) -> _Plan:
    """Choose the isolation mode and the child's interpreter once per process."""
    drop_uid = os.geteuid() == 0
    if drop_uid:
        _become_subreaper()
    pythons = [p for p in map(_probe_interpreter, _candidates()) if p]
    if drop_uid:
        pythons = [p for p in pythons if _world_usable(p.path)]
    if not pythons:
        raise SandboxError(
            "no Python >= 3.11 that an unprivileged user may run (install python3 under /usr)"
        )
    bwrap = shutil.which("bwrap")
    if requested in ("auto", "bwrap") and bwrap:
        for python in pythons:
            plan = _Plan("bwrap", drop_uid, python, bwrap)
            if _works(plan):
                return plan
    if requested == "bwrap":
        raise SandboxError(f"{MODE_ENV}=bwrap but bubblewrap is missing or cannot run here")
    return _Plan("rlimits", drop_uid, pythons[0], None)


def _works(plan: _Plan) -> bool:
    """Whether bubblewrap can start the interpreter here with this plan (a 1-second probe)."""
    with tempfile.TemporaryDirectory(prefix="infralab-probe-") as tmp:
        uid = _fresh_uid() if plan.drop_uid else None
        case, out = Path(tmp) / "case", Path(tmp) / "out"
        case.mkdir()
        out.mkdir()
        if uid is not None:
            for path in (tmp, case, out):
                os.chown(path, uid, uid)
        command = _bwrap_command(plan, case, out, [plan.python.path, "-I", "-S", "-c", "pass"])
        prefix, preexec = _launcher(Limits(), uid, _own_tasks() if uid is None else 0)
        try:
            done = subprocess.run(
                [*prefix, *command],
                capture_output=True,
                check=False,
                timeout=10,
                env={},
                start_new_session=True,
                preexec_fn=preexec,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        finally:
            if uid is not None:
                _kill_uid(uid)
        return done.returncode == 0


def isolation_mode() -> str:
    """The mode ``run_simulation`` uses on this host ("bwrap+uid", "rlimits", ...)."""
    plan = _plan(_requested_mode())
    return plan.mode + ("+uid" if plan.drop_uid else "")


def _requested_mode() -> str:
    value = os.environ.get(MODE_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "bwrap", "rlimits"):
        raise SandboxError(f"{MODE_ENV} must be auto, bwrap or rlimits, got {value!r}")
    return value


# --- the child -------------------------------------------------------------------------------


def _fresh_uid() -> int:
    return UID_RANGE[0] + secrets.randbelow(UID_RANGE[1] - UID_RANGE[0])


def _own_tasks() -> int:
    """Tasks (threads included) that already run under this uid: RLIMIT_NPROC counts them."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def _rlimits(limits: Limits, nproc_base: int) -> list[tuple[str, int, int, int]]:
    """(prlimit option, resource, soft, hard) for every limit the child gets."""
    cpu = max(1, math.ceil(limits.cpu_s))
    return [
        ("--cpu", resource.RLIMIT_CPU, cpu, cpu + 1),  # SIGXCPU at soft, SIGKILL at hard
        ("--as", resource.RLIMIT_AS, limits.memory_mb << 20, limits.memory_mb << 20),
        ("--fsize", resource.RLIMIT_FSIZE, limits.file_mb << 20, limits.file_mb << 20),
        ("--nofile", resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        ("--nproc", resource.RLIMIT_NPROC, *(limits.processes + nproc_base,) * 2),
        ("--core", resource.RLIMIT_CORE, 0, 0),
    ]


def _launcher(limits: Limits, uid: int | None, nproc_base: int) -> tuple[list[str], object]:
    """(command prefix, preexec_fn) that applies the rlimits and the uid before the child runs.

    util-linux's ``prlimit`` and ``setpriv`` do it in the exec chain (safe with threads, and
    ``--no-new-privs`` on top); without them, a ``preexec_fn`` does the same in the fork.
    """
    prlimit, setpriv = shutil.which("prlimit"), shutil.which("setpriv")
    if prlimit and (uid is None or setpriv):
        prefix = [
            prlimit,
            *(f"{opt}={soft}:{hard}" for opt, _, soft, hard in _rlimits(limits, nproc_base)),
        ]
        if uid is not None:
            prefix += [
                setpriv,
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--no-new-privs",
            ]
        return [*prefix, "--"], None
    return [], functools.partial(_child_setup, limits, uid, nproc_base)


def _child_setup(limits: Limits, uid: int | None, nproc_base: int) -> None:
    """Fallback ``preexec_fn`` (no util-linux): rlimits, then the unprivileged uid."""
    for _, which, soft, hard in _rlimits(limits, nproc_base):
        resource.setrlimit(which, (soft, hard))
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)


def _become_subreaper() -> None:
    """Orphans of a killed child tree re-parent to the grader (not to a PID 1 that may never
    reap them); ``_kill_uid`` then reaps them."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_orphans(uid: int) -> None:
    me = str(os.getpid())
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            status = Path(f"/proc/{entry.name}/status").read_text()
        except OSError:
            continue
        if f"PPid:\t{me}\n" in status:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(entry.name), 0)


def _kill_uid(uid: int) -> None:
    """Kill every process of ``uid`` (``kill -KILL -1`` run as that uid), then reap those that
    were re-parented to the grader."""
    kill = shutil.which("kill") or "/bin/kill"
    for _ in range(2):
        with contextlib.suppress(OSError):
            subprocess.run(
                [kill, "-KILL", "--", "-1"],
                user=uid,
                group=uid,
                extra_groups=[],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
                env={},
            )
    _reap_orphans(uid)


SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")


def _remove_files_of(uid: int) -> None:
    """Fallback mode: delete what the child's uid left in the host's world-writable folders,
    so nothing it stashed there outlives the case (bubblewrap gives it a private /tmp)."""
    for top in SHARED_WRITABLE:
        with contextlib.suppress(OSError):
            for entry in os.scandir(top):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)


def _host_root_binds() -> list[str]:
    """/usr read-only, and /bin, /lib, /lib64, /sbin as the host has them (links or binds)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    return args


def _bwrap_command(
    plan: _Plan, case: Path, out: Path, inner: list[str], tmp_mb: int = Limits.tmp_mb
) -> list[str]:
    command = [plan.bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
    command += _host_root_binds()
    prefix = plan.python.prefix
    if not (prefix == "/usr" or prefix.startswith("/usr/")):
        command += ["--ro-bind", prefix, prefix]
    command += ["--ro-bind", str(case), CASE_DIR, "--bind", str(out), OUT_DIR]
    command += ["--proc", "/proc", "--dev", "/dev"]
    command += ["--size", str(tmp_mb << 20), "--tmpfs", "/tmp"]
    command += ["--chdir", CASE_DIR, "--clearenv"]
    for key, value in _child_env().items():
        command += ["--setenv", key, value]
    return [*command, "--", *inner]


def _child_env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}


def _prepare_case(
    root: Path, lab_dir: Path, submission_files: dict[str, bytes], extra: dict[str, bytes]
) -> Path:
    """The case folder: pristine lab copy, then the editable files, then ``extra`` files."""
    case = root / "lab"
    shutil.copytree(
        lab_dir, case, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests", "runs")
    )
    for name, data in submission_files.items():
        target = (case / name).resolve()
        if case.resolve() not in target.parents:
            raise SandboxError(f"submission file name escapes the lab folder: {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for name, data in extra.items():
        (case / name).write_bytes(data)
    return case


def _read_output(path: Path, cap: int) -> tuple[bytes | None, str | None]:
    """The run file if it is a regular file (not a link, FIFO, device) of at most ``cap`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot open it safely ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_nlink != 1:
            return None, "has other hard links"
        if info.st_size > cap:
            return None, f"larger than {cap >> 20} MB"
        data = handle.read(cap + 1)
    if len(data) > cap:
        return None, f"larger than {cap >> 20} MB"
    return data, None


def _tail_text(handle) -> str:
    handle.flush()
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(0, size - OUTPUT_LIMIT))
    text = handle.read(OUTPUT_LIMIT).decode("utf-8", "replace")
    if size > OUTPUT_LIMIT:
        text = f"[... {size - OUTPUT_LIMIT} earlier bytes cut ...]\n" + text
    return text


def _which_limit(
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


@dataclass(frozen=True)
class _Raw:
    """How the child process ended, before its files are read."""

    returncode: int | None
    timed_out: bool
    stdout: str
    stderr: str
    full: bool  # stdout or stderr reached the file-size limit
    wall_s: float


class _Feed:
    """Batch runs: the parent hands the runner one case at a time over its stdin, and learns
    that a case is done from the runner's stdout (one line per case). A case's trace is sent
    only once the case before it has finished, so no case process ever holds a later case's
    trace; ``watch`` counts the finished cases (the wall limit then applies per case)."""

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


Build = Callable[[str, str], list[str]]  # (case folder, output folder) -> the child's argv
Collect = Callable[[Path, _Raw, str], list]


def _launch(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    *,
    extra: dict[str, bytes],
    build: Build,
    collect: Collect,
    limits: Limits,
    feed: _Feed | None = None,
) -> list:
    """Prepare a private case folder, run the child there under the plan, and ``collect``."""
    plan = _plan(_requested_mode())
    isolation = plan.mode + ("+uid" if plan.drop_uid else "")
    uid = _fresh_uid() if plan.drop_uid else None
    with tempfile.TemporaryDirectory(prefix="infralab-case-") as tmp:
        root = Path(tmp)  # 0700, owned by the grader
        private = root / "work"  # owned by the child's uid; the grader's own files stay outside
        private.mkdir(mode=0o700)
        case = _prepare_case(private, lab_dir, submission_files, extra)
        out = private / f"out-{secrets.token_hex(8)}"
        out.mkdir()
        if uid is not None:
            os.chmod(root, 0o711)  # the child may pass through, not list
            for path in (private, *private.rglob("*")):
                os.lchown(path, uid, uid)
        if plan.mode == "bwrap":
            inner = [plan.python.path, "-I", "-S", "-B", *build(CASE_DIR, OUT_DIR)]
            command = _bwrap_command(plan, case, out, inner, limits.tmp_mb)
            env, cwd = {}, "/"
        else:
            command = [plan.python.path, "-I", "-S", "-B", *build(str(case), str(out))]
            env, cwd = _child_env() | {"HOME": str(private), "TMPDIR": str(private)}, case
        prefix, preexec = _launcher(limits, uid, 0 if uid is not None else _own_tasks())
        started = time.monotonic()
        with (
            tempfile.TemporaryFile(dir=root) as stdout,
            tempfile.TemporaryFile(dir=root) as stderr,
        ):
            try:
                child = subprocess.Popen(
                    [*prefix, *command],
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
                    stdout=subprocess.PIPE if feed else stdout,
                    stderr=stderr,
                    start_new_session=True,
                    preexec_fn=preexec,  # noqa: PLW1509 - only without util-linux
                )
            except OSError as exc:
                raise SandboxError(f"cannot start the child process: {exc}") from None
            timed_out = False
            try:
                returncode = _wait(child, limits.wall_s, feed)
            except subprocess.TimeoutExpired:
                timed_out, returncode = True, None
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)
                if uid is not None:
                    _kill_uid(uid)
                    if plan.mode != "bwrap":
                        _remove_files_of(uid)
                child.wait()
                for pipe in (child.stdin, child.stdout):
                    if pipe:
                        with contextlib.suppress(OSError):
                            pipe.close()
            elapsed = time.monotonic() - started
            out_text, err_text = _tail_text(stdout), _tail_text(stderr)
            sizes = [os.fstat(f.fileno()).st_size for f in (stdout, stderr)]
        if plan.mode == "bwrap" and returncode is not None and 128 < returncode < 128 + 65:
            returncode = 128 - returncode  # bubblewrap reports a child's signal N as 128 + N
        full = max(sizes) >= limits.file_mb << 20
        raw = _Raw(returncode, timed_out, out_text, err_text, full, elapsed)
        return collect(out, raw, isolation)


def _wait(child: subprocess.Popen, wall_s: float, feed: _Feed | None) -> int:
    """Wait for the child; a pidfd wakes us the moment it exits (no polling sleeps).

    With ``feed`` (batch runs) the parent also writes the next case to the runner when the
    previous one is done, and the wall limit restarts whenever a case finishes.
    """
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        pidfd = None
    deadline = time.monotonic() + wall_s
    progress = None
    if feed:
        os.set_blocking(child.stdin.fileno(), False)
        progress = child.stdout.fileno()
        feed.advance()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(child.args, wall_s)
            readers = [fd for fd in (pidfd, progress) if fd is not None]
            writers = [child.stdin.fileno()] if feed and feed.pending else []
            step = left if pidfd is not None else min(left, 0.05)
            readable, writable, _ = select.select(readers, writers, [], step)
            if (pidfd is not None and pidfd in readable) or child.poll() is not None:
                break
            if writable:
                _write_some(child, feed)
            if progress is not None and progress in readable:
                data = os.read(progress, 4096)
                if not data:  # the runner closed its stdout: only its exit is left to wait for
                    progress = None
                elif feed.heard(data):
                    deadline = time.monotonic() + wall_s
                    feed.advance()
                if feed.finished and not feed.closed:
                    feed.closed = True
                    child.stdin.close()  # end of input: the runner exits
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return child.wait()


def _write_some(child: subprocess.Popen, feed: _Feed) -> None:
    try:
        sent = os.write(child.stdin.fileno(), feed.pending[:65536])
        feed.pending = feed.pending[sent:]
    except BlockingIOError:
        pass
    except OSError:  # the runner is gone; its exit wakes us next
        feed.pending = b""


def _child_result(raw: _Raw, isolation: str, output: Path, limits: Limits) -> ChildResult:
    sig, limit = _which_limit(raw.returncode, raw.timed_out, raw.stderr, raw.full)
    data, output_error = _read_output(output, limits.output_mb << 20)
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


def run_simulation(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    trace_path: Path,
    argv: list[str],
    limits: Limits = Limits(),
) -> ChildResult:
    """Run ``simulate.py --trace <trace> <argv> --output <secret>`` on a private lab copy.

    Raises ``SandboxError`` only when the sandbox itself cannot run; whatever the submission
    does (crash, loop, exit early, write junk) comes back as a ``ChildResult``.
    """
    name = f"run-{secrets.token_hex(8)}.json"

    def build(case: str, out: str) -> list[str]:
        trace = f"{case}/{CASE_TRACE}"
        return ["simulate.py", "--trace", trace, *argv, "--output", f"{out}/{name}"]

    def collect(out: Path, raw: _Raw, isolation: str) -> list[ChildResult]:
        return [_child_result(raw, isolation, out / name, limits)]

    extra = {CASE_TRACE: Path(trace_path).read_bytes()}
    return _launch(
        lab_dir, submission_files, extra=extra, build=build, collect=collect, limits=limits
    )[0]


@dataclass(frozen=True)
class CaseRun:
    """One case of a batch: the trace file and the simulate.py flags (no --trace/--output)."""

    trace_path: Path
    argv: list[str]


CASE_TRACE = "case-trace.json"
RUNNER = Path(__file__).with_name("case_runner.py")
RUNNER_NAME = "_infralab_runner.py"


def run_cases(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    runs: list[CaseRun],
    limits: Limits = Limits(),
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
    plan = _plan(_requested_mode())
    names = [f"{secrets.token_hex(8)}-{n}" for n in range(len(runs))]
    cpu = max(0.05, float(limits.cpu_s))
    batch_limits = dataclasses.replace(limits, cpu_s=math.ceil(cpu * len(runs)) + 1)
    # kill(-1) is safe only alone in a PID namespace or under a dedicated uid
    leftovers = "kill" if plan.mode == "bwrap" or plan.drop_uid else "keep"

    def build(case: str, out: str) -> list[str]:
        return [RUNNER_NAME, out, repr(cpu), leftovers]

    messages = []
    for name, run in zip(names, runs, strict=True):
        body = json.dumps({"argv": list(run.argv), "trace": Path(run.trace_path).read_text()})
        body = body.encode()
        messages.append(b"case %d %s\n" % (len(body), name.encode()) + body)
    feed = _Feed(messages)

    def collect(out: Path, raw: _Raw, isolation: str) -> list[ChildResult | None]:
        results: list[ChildResult | None] = []
        cap = batch_limits.file_mb << 20
        for name in names:
            found, code = _read_status(out / f"{name}.status")
            if not found:
                break
            stdout, out_size = _read_tail(out / f"{name}.stdout")
            stderr, err_size = _read_tail(out / f"{name}.stderr")
            full = max(out_size, err_size) >= cap
            case_raw = _Raw(code, False, stdout, stderr, full, raw.wall_s)
            results.append(_child_result(case_raw, isolation, out / f"{name}.json", limits))
        if len(results) < len(names):  # the case the child was on when it ended
            name = names[len(results)]
            stdout, _ = _read_tail(out / f"{name}.stdout")
            stderr, _ = _read_tail(out / f"{name}.stderr")
            case_raw = dataclasses.replace(raw, stdout=stdout, stderr=_join(stderr, raw.stderr))
            results.append(_child_result(case_raw, isolation, out / f"{name}.json", limits))
        return results + [None] * (len(names) - len(results))

    extra = {RUNNER_NAME: RUNNER.read_bytes()}
    return _launch(
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


def _read_status(path: Path) -> tuple[bool, int | None]:
    """(found, exit code) from a case's status file; a junk file counts as not found."""
    data, error = _read_output(path, 4096)
    if data is None or error:
        return False, None
    try:
        code = json.loads(data)["code"]
    except (ValueError, KeyError, TypeError):
        return False, None
    if not isinstance(code, int) or isinstance(code, bool) or not -64 < code < 256:
        return False, None
    return True, code


def _read_tail(path: Path) -> tuple[str, int]:
    """(last ``OUTPUT_LIMIT`` bytes as text, size) of a file the child wrote (regular only)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "", 0
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "", 0
        return _tail_text(handle), info.st_size
