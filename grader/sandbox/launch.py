"""One sandboxed child: prepare its private case folder, start it under the host's plan, let a
``Session`` talk to it within its deadlines, and kill whatever it leaves behind.

The temp root is the grader's (0700; 0711 when a dedicated uid must pass through it); the
runner's own stderr file sits there, outside the child's ``work`` folder. The case folder is
the grader's and read-only for the child (bubblewrap binds it read-only; without bubblewrap
only the randomly named output folder belongs to the child's uid). Under bubblewrap the child
writes only to size-capped tmpfs mounts (``/out``, ``/tmp``), never to the host's disk.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import bytecode
from .bwrap import CASE_DIR, OUT_DIR, child_env
from .host import current_plan, scratch_dir
from .output import tail_text
from .results import Limits, Raw, SandboxError
from .rlimits import launcher
from .session import Session
from .uids import hand_over, kill_uid, own_tasks, remove_files_of, reserved_uid

Build = Callable[[str, str], list[str]]  # (case folder, output folder) -> the child's argv


def prepare_case(
    root: Path, lab_dir: Path, submission_files: dict[str, bytes], extra: dict[str, bytes]
) -> Path:
    """The case folder: pristine lab copy (with the lab's warmed bytecode), then the editable
    files, then ``extra`` files."""
    case = root / "lab"
    shutil.copytree(
        lab_dir, case, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *bytecode.LEFT_OUT)
    )
    bytecode.install(case, lab_dir, skip=set(submission_files) | set(extra))
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
    with contextlib.ExitStack() as stack:
        uid = stack.enter_context(reserved_uid()) if plan.drop_uid else None
        folder = tempfile.TemporaryDirectory(prefix="infralab-case-", dir=scratch_dir())
        root = Path(stack.enter_context(folder))
        private = root / "work"  # owned by the child's uid; the grader's own files stay outside
        private.mkdir(mode=0o711 if uid is not None else 0o700)
        case = prepare_case(private, lab_dir, submission_files, extra)
        out = private / f"out-{secrets.token_hex(8)}"
        out.mkdir()
        if uid is not None:
            os.chmod(root, 0o711)  # the child may pass through, not list
            hand_over([out], uid)
        if plan.mode == "bwrap":
            inner = [plan.python.path, "-I", "-S", "-B", *build(CASE_DIR, OUT_DIR)]
            command = plan.bwrap_command(case, inner, limits)
            env, cwd = {}, "/"
        else:
            command = [plan.python.path, "-I", "-S", "-B", *build(str(case), str(out))]
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
            preexec_fn=preexec,  # noqa: PLW1509 - only without util-linux
        )
    except OSError as exc:
        raise SandboxError(f"cannot start the child process: {exc}") from None
    timed_out = False
    try:
        returncode = session.run(child)
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
            with contextlib.suppress(OSError):
                pipe.close()
    if plan.mode == "bwrap" and returncode is not None and 128 < returncode < 128 + 65:
        returncode = 128 - returncode  # bubblewrap reports a child's signal N as 128 + N
    err_text = tail_text(stderr)
    return Raw(returncode, timed_out, "", err_text, False, time.monotonic() - started)
