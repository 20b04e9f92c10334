"""One sandboxed child: prepare its private case folder, start it under the host's plan, let a
``Session`` talk to it within its deadlines, and kill whatever it leaves behind.

The temp root is the grader's (0700); the runner's own stderr file sits there, outside the
child's ``work`` folder. The case folder is
the grader's and read-only for the child (bubblewrap binds it read-only; without bubblewrap
only the randomly named output folder belongs to the child's uid), which matters the more as
its lab files are hard links that later case folders share (``template``). Under bubblewrap
the child writes only to size-capped tmpfs mounts (``/out``, ``/tmp``), never to the host's
disk.

With a dedicated uid, the temp root and the case folder's parent are ``root:<child's gid>``
0710: the child may pass through, no other uid may (the submission's files are the child's
alone, 0640 ``root:<gid>``, and the output folder 0700 its own). The temp root is held with a
``flock`` for as long as it is in use, so that a grader that was killed outright leaves nothing
that the next one does not remove (``host.sweep_folders``). Every child starts in ``confine``,
which ties it to this process and installs its seccomp filter before the runner runs. A
SIGTERM that finds its default action unwinds instead (``unwind_on_sigterm``): every child is
killed and everything of its case is removed before the grader exits.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..tempfolders import hold_folder
from . import confine, seccomp, template
from .bwrap import CASE_DIR, OUT_DIR, child_env
from .host import CASE_PREFIX, current_plan, scratch_dir
from .output import tail_text
from .results import Limits, Raw, SandboxError
from .rlimits import launcher
from .session import Session
from .uids import hand_over, kill_uid, own_tasks, remove_files_of, remove_ipc_of, reserved_uid

Build = Callable[[str, str], list[str]]  # (case folder, output folder) -> the child's argv
CONFINE = Path(confine.__file__).read_bytes()
_live: set[subprocess.Popen] = set()  # children running now, in any thread


def unwind_on_sigterm() -> None:
    """Where SIGTERM still has its default action and this is the main thread, make it kill
    every live child and raise ``SystemExit`` (143), so that each ``launch`` cleans up its case
    (processes, files, IPC objects, folders) before the grader exits. A handler the caller set
    (a batch worker's) is left alone; it must unwind the same way."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame):
    for child in list(_live):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
    raise SystemExit(128 + signum)


def prepare_case(
    root: Path,
    lab_dir: Path,
    submission_files: dict[str, bytes],
    extra: dict[str, bytes],
    gid: int | None = None,
) -> Path:
    """The case folder: the lab's pristine files (``template``: hard links to the warmed
    template, or a copy), then the editable files, then ``extra`` files, each written as a new
    file (never through a link), 0640 and of group ``gid`` (the child's) when given, else 0600
    (the child runs as this process's user)."""
    case = root / "lab"
    files = {_relative(name): data for name, data in (submission_files | extra).items()}
    template.lay_out(case, lab_dir, set(files))
    for name, data in files.items():
        target = os.path.join(case, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)  # never write through a link to the template
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(target, flags, 0o600 if gid is None else 0o640)
        if gid is not None:
            os.fchown(fd, -1, gid)
        with open(fd, "wb") as handle:
            handle.write(data)
    return case


def _relative(name: str) -> str:
    """``name`` normalised, relative to the case folder; ``SandboxError`` if it leaves it."""
    relative = os.path.normpath(name)
    if os.path.isabs(relative) or relative == "." or relative.split(os.sep)[0] == "..":
        raise SandboxError(f"submission file name escapes the lab folder: {name!r}")
    return relative


def launch(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    *,
    extra: dict[str, bytes],
    build: Build,
    limits: Limits,
    session: Session,
) -> Raw:
    """Prepare a private case folder, run the runner there under the plan, talk to it through
    ``session`` and clean up; how the child as a whole ended.

    Raises ``SandboxError`` when the child cannot be started at all.
    """
    plan = current_plan()
    if plan.mode != "bwrap" and not plan.drop_uid:
        raise SandboxError(
            "the rlimits mode needs root (a dedicated uid for the child); install bubblewrap "
            "(apt-get install bubblewrap) or run the grader as root"
        )
    unwind_on_sigterm()
    with contextlib.ExitStack() as stack:
        uid = stack.enter_context(reserved_uid()) if plan.drop_uid else None
        folder = tempfile.TemporaryDirectory(prefix=CASE_PREFIX, dir=scratch_dir())
        root = Path(stack.enter_context(folder))
        stack.callback(os.close, hold_folder(root))
        private = root / "work"  # the grader's; only the output folder is the child's
        private.mkdir(mode=0o700)
        if uid is not None:
            for path in (root, private):  # the child may pass through; no other uid may
                os.chown(path, -1, uid)
                os.chmod(path, 0o710)
        extra = {**extra, confine.NAME: CONFINE}
        case = prepare_case(private, lab_dir, submission_files, extra, uid)
        out = private / f"out-{secrets.token_hex(8)}"
        out.mkdir(mode=0o700)
        if uid is not None:
            hand_over([out], uid)
        python = [plan.python.path, "-I", "-S", "-B", confine.NAME, seccomp.filter_bytes().hex()]
        if plan.mode == "bwrap":
            command = plan.bwrap_command(case, [*python, *build(CASE_DIR, OUT_DIR)], limits)
            env, cwd = {}, "/"
        else:
            command = [*python, *build(str(case), str(out))]
            env, cwd = child_env() | {"HOME": str(out), "TMPDIR": str(out)}, case
        prefix, preexec = launcher(limits, uid, 0 if uid is not None else own_tasks())
        stderr = stack.enter_context(tempfile.TemporaryFile(dir=root))
        return _run(plan, uid, [*prefix, *command], env, cwd, stderr, preexec, session)


def _run(plan, uid, command, env, cwd, stderr, preexec, session: Session) -> Raw:
    """Start the child, let ``session`` talk to it, then kill all it left; how it ended."""
    started = time.monotonic()
    try:
        child = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            umask=0o077,  # what the child makes is its own unless it says otherwise
            preexec_fn=preexec,  # noqa: PLW1509 - only without util-linux
        )
    except OSError as exc:
        raise SandboxError(f"cannot start the child process: {exc}") from None
    timed_out = False
    try:
        _live.add(child)
        returncode = session.run(child)
    except subprocess.TimeoutExpired:
        timed_out, returncode = True, None
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        if uid is not None:
            kill_uid(uid)
            if plan.mode != "bwrap":  # bubblewrap: private tmpfs and IPC namespace
                remove_files_of(uid)
                remove_ipc_of(uid)
        child.wait()
        _live.discard(child)
        for pipe in (child.stdin, child.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
    if plan.mode == "bwrap" and returncode is not None and 128 < returncode < 128 + 65:
        returncode = 128 - returncode  # bubblewrap reports a child's signal N as 128 + N
    err_text = tail_text(stderr)
    return Raw(returncode, timed_out, "", err_text, False, time.monotonic() - started)
