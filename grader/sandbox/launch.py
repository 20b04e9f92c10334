"""One sandboxed child: prepare its private case folder, start it under the host's plan, wait
for it within the wall limit, kill whatever it leaves behind, and hand its files to ``collect``.

The temp root is the grader's (0700; 0711 when a dedicated uid must pass through it); the
child's stdout/stderr files sit there, outside the child's own ``work`` folder, which holds the
case folder and one randomly named output folder and, as root, belongs to the child's uid.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .bwrap import CASE_DIR, OUT_DIR, child_env
from .host import current_plan
from .output import tail_text
from .results import Limits, Raw, SandboxError
from .rlimits import launcher
from .uids import fresh_uid, hand_over, kill_uid, own_tasks, remove_files_of

if TYPE_CHECKING:
    from .multicase import Feed

Build = Callable[[str, str], list[str]]  # (case folder, output folder) -> the child's argv
Collect = Callable[[Path, Raw, str], list]  # (output folder, how it ended, isolation) -> results


def prepare_case(
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


def launch(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    *,
    extra: dict[str, bytes],
    build: Build,
    collect: Collect,
    limits: Limits,
    feed: Feed | None = None,
) -> list:
    """Prepare a private case folder, run the child there under the plan, and ``collect``.

    Raises ``SandboxError`` when the child cannot be started at all.
    """
    plan = current_plan()
    uid = fresh_uid() if plan.drop_uid else None
    with tempfile.TemporaryDirectory(prefix="infralab-case-") as tmp:
        root = Path(tmp)  # 0700, owned by the grader
        private = root / "work"  # owned by the child's uid; the grader's own files stay outside
        private.mkdir(mode=0o700)
        case = prepare_case(private, lab_dir, submission_files, extra)
        out = private / f"out-{secrets.token_hex(8)}"
        out.mkdir()
        if uid is not None:
            os.chmod(root, 0o711)  # the child may pass through, not list
            hand_over([private, *private.rglob("*")], uid)
        if plan.mode == "bwrap":
            inner = [plan.python.path, "-I", "-S", "-B", *build(CASE_DIR, OUT_DIR)]
            command = plan.bwrap_command(case, out, inner, limits.tmp_mb)
            env, cwd = {}, "/"
        else:
            command = [plan.python.path, "-I", "-S", "-B", *build(str(case), str(out))]
            env, cwd = child_env() | {"HOME": str(private), "TMPDIR": str(private)}, case
        prefix, preexec = launcher(limits, uid, 0 if uid is not None else own_tasks())
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
                    kill_uid(uid)
                    if plan.mode != "bwrap":
                        remove_files_of(uid)
                child.wait()
                for pipe in (child.stdin, child.stdout):
                    if pipe:
                        with contextlib.suppress(OSError):
                            pipe.close()
            elapsed = time.monotonic() - started
            out_text, err_text = tail_text(stdout), tail_text(stderr)
            sizes = [os.fstat(f.fileno()).st_size for f in (stdout, stderr)]
        if plan.mode == "bwrap" and returncode is not None and 128 < returncode < 128 + 65:
            returncode = 128 - returncode  # bubblewrap reports a child's signal N as 128 + N
        full = max(sizes) >= limits.file_mb << 20
        raw = Raw(returncode, timed_out, out_text, err_text, full, elapsed)
        return collect(out, raw, plan.isolation)


def _wait(child: subprocess.Popen, wall_s: float, feed: Feed | None) -> int:
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


def _write_some(child: subprocess.Popen, feed: Feed) -> None:
    try:
        sent = os.write(child.stdin.fileno(), feed.pending[:65536])
        feed.pending = feed.pending[sent:]
    except BlockingIOError:
        pass
    except OSError:  # the runner is gone; its exit wakes us next
        feed.pending = b""
