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
import functools
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
from dataclasses import dataclass
from pathlib import Path

OUTPUT_LIMIT = 64 * 1024  # characters of stdout/stderr kept for feedback
MODE_ENV = "INFRALAB_SANDBOX"  # "auto" (default), "bwrap" (required) or "rlimits" (fallback)
UID_RANGE = (200_000, 260_000)  # dedicated child uids (no passwd entry needed)
CASE_DIR = "/lab"  # where the case folder appears inside bubblewrap
OUT_DIR = "/out"
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36


class SandboxError(RuntimeError):
    """The sandbox itself cannot run (not the submission's fault): grading must stop."""


@dataclass(frozen=True)
class Limits:
    wall_s: float = 20.0
    cpu_s: int = 10
    memory_mb: int = 1024  # address space
    file_mb: int = 64  # largest file the child may write (stdout/stderr included)
    open_files: int = 64
    processes: int = 64  # tasks of the child's uid (only enforceable with a dedicated uid)
    output_mb: int = 16  # largest run file the parent reads back
    tmp_mb: int = 64  # size of the child's private /tmp (bubblewrap only)


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
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                check=False,
                timeout=10,
                env={},
                preexec_fn=functools.partial(_child_setup, Limits(), uid, 0),
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


def _child_setup(limits: Limits, uid: int | None, nproc_base: int) -> None:
    """Runs in the forked child before exec: new session, rlimits, then the unprivileged uid."""
    os.setsid()
    cpu = max(1, int(limits.cpu_s))
    rlimits = [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (limits.memory_mb << 20,) * 2),
        (resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2),
        (resource.RLIMIT_NOFILE, (limits.open_files,) * 2),
        (resource.RLIMIT_NPROC, (limits.processes + nproc_base,) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    for which, value in rlimits:
        resource.setrlimit(which, value)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


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
    """Kill every process of ``uid`` (a forked helper becomes that uid and signals -1), then
    reap those that were re-parented to the grader."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the helper
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(3):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    _reap_orphans(uid)


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
    root: Path, lab_dir: Path, submission_files: dict[str, bytes], trace_path: Path
) -> Path:
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
    shutil.copyfile(trace_path, case / "case-trace.json")
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
    by_signal = {"SIGXCPU": "CPU time", "SIGXFSZ": "file size"}
    limit = by_signal.get(sig or "")
    if sig == "SIGKILL":  # the hard CPU limit, or the kernel's OOM killer
        limit = "CPU time or memory"
    return sig, limit


def _wait(child: subprocess.Popen, timeout: float) -> int:
    """``child.wait(timeout)`` without its polling sleeps (a pidfd wakes us at once on Linux)."""
    try:
        fd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        return child.wait(timeout=timeout)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if not ready:
        raise subprocess.TimeoutExpired(child.args, timeout)
    return child.wait()


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
    plan = _plan(_requested_mode())
    isolation = plan.mode + ("+uid" if plan.drop_uid else "")
    uid = _fresh_uid() if plan.drop_uid else None
    with tempfile.TemporaryDirectory(prefix="infralab-case-") as tmp:
        root = Path(tmp)  # 0700, owned by the grader
        private = root / "work"  # owned by the child's uid; the grader's own files stay outside
        private.mkdir(mode=0o700)
        case = _prepare_case(private, lab_dir, submission_files, trace_path)
        out = private / f"out-{secrets.token_hex(8)}"
        out.mkdir()
        name = f"run-{secrets.token_hex(8)}.json"
        if uid is not None:
            os.chmod(root, 0o711)  # the child may pass through, not list
            for path in (private, *private.rglob("*")):
                os.lchown(path, uid, uid)
        if plan.mode == "bwrap":
            python = [plan.python.path, "-I", "-S", "-B"]
            inner = [*python, "simulate.py", "--trace", f"{CASE_DIR}/case-trace.json", *argv]
            command = _bwrap_command(
                plan, case, out, [*inner, "--output", f"{OUT_DIR}/{name}"], limits.tmp_mb
            )
            env, cwd = {}, "/"
        else:
            python = [plan.python.path, "-I", "-S", "-B", "simulate.py"]
            command = [*python, "--trace", str(case / "case-trace.json"), *argv]
            command += ["--output", str(out / name)]
            env, cwd = _child_env() | {"HOME": str(private), "TMPDIR": str(private)}, case
        nproc_base = 0 if uid is not None else _own_tasks()
        started = time.monotonic()
        with (
            tempfile.TemporaryFile(dir=root) as stdout,
            tempfile.TemporaryFile(dir=root) as stderr,
        ):
            try:
                child = subprocess.Popen(
                    command,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=stderr,
                    # preexec_fn: the grader forks no threads while a case runs
                    preexec_fn=functools.partial(_child_setup, limits, uid, nproc_base),  # noqa: PLW1509
                )
            except OSError as exc:
                raise SandboxError(f"cannot start the child process: {exc}") from None
            timed_out = False
            try:
                returncode = _wait(child, limits.wall_s)
            except subprocess.TimeoutExpired:
                timed_out, returncode = True, None
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)
                if uid is not None:
                    _kill_uid(uid)
                child.wait()
            elapsed = time.monotonic() - started
            out_text, err_text = _tail_text(stdout), _tail_text(stderr)
            sizes = [os.fstat(f.fileno()).st_size for f in (stdout, stderr)]
        if plan.mode == "bwrap" and returncode is not None and 128 < returncode < 128 + 65:
            returncode = 128 - returncode  # bubblewrap reports a child's signal N as 128 + N
        full = max(sizes) >= limits.file_mb << 20
        sig, limit = _which_limit(returncode, timed_out, err_text, full)
        data, output_error = _read_output(out / name, limits.output_mb << 20)
        return ChildResult(
            returncode=returncode,
            stdout=out_text,
            stderr=err_text,
            timed_out=timed_out,
            output=data,
            isolation=isolation,
            signal=sig,
            limit=limit,
            output_error=output_error,
            wall_s=elapsed,
        )
