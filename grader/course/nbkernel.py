"""The notebook kernel of autograding, started inside the grader's sandbox.

``python -m grader.course.nbkernel -f CONNECTION_FILE [ipykernel options]`` is the kernel's
command (``kernel_spec``): it runs as the grading user, outside the sandbox, and starts an
IPython kernel inside bubblewrap under the host's sandbox plan (``grader.sandbox.host``), with
the same limits machinery as ``infralab grade`` (rlimits, a dedicated uid when the grader is
root, no network). What exists in the kernel's file system:

- ``/usr`` (and ``/bin``, ``/lib*``), the sandbox's Python, read-only;
- the staff environment's ``site-packages`` folders (ipykernel and its dependencies), read-only;
  the staff package itself is not there when it is installed editable (its checkout is never
  bound), and a folder that holds the checkout or the course's hidden material is refused;
- ``LAB``: a size-capped tmpfs holding a copy of the notebook's folder (the student's files and
  the course's public lab files), where the kernel runs and writes;
- ``/tmp``, size-capped tmpfs; the connection file, read-only; with the ``ipc`` transport
  (``nbautograde.SandboxKernelManager``, the one autograding uses), the kernel's socket folder,
  made for this kernel alone. With ``tcp`` (a kernel started by name, e.g. ``nbgrader
  validate``) the kernel shares the host's network instead.

Nothing else: not the course directory (gradebook, ``source/``, other students), not the
checkout (hidden traces, golden files, solutions, answer-key plug-ins, grader code), not the
grading user's cache or home. Without bubblewrap the kernel refuses to start.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..sandbox import CASE_DIR, Limits, SandboxError, scratch_dir
from ..sandbox.host import current_plan, reachable_by_others
from ..sandbox.rlimits import launcher
from ..sandbox.uids import hand_over, kill_uid, own_tasks, reserved_uid
from ..units import CODE_ROOT

KERNEL_NAME = "infralab"
SOURCE = CASE_DIR  # the notebook's folder as copied for the kernel, read-only
LAB = "/notebook"  # the kernel's working copy of it, a size-capped tmpfs
CONNECTION = "/run/infralab/connection.json"
SOCKETS = "/run/infralab/sockets"  # where the socket folder appears in the sandbox
PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
SEAL_WAIT_S = 60.0
LAB_MB = 512  # size of the working copy's tmpfs (the lab's runs included)
SHM_MB = 64  # size of the kernel's own /dev/shm (semaphores of a process pool)
LIMITS = Limits(
    cpu_s=3600,  # CPU seconds of each process of the kernel (the cell timeout bounds wall time)
    memory_mb=4096,
    file_mb=64,
    open_files=512,
    processes=256,
    tmp_mb=256,
    out_mb=1,
)
# Inside the sandbox: copy the notebook's folder to the tmpfs, add the site folders, start
# ipykernel (what ``ipykernel_launcher`` does, without the current folder on sys.path).
BOOT = """
import os, shutil, site, sys
source, lab, sites, *args = sys.argv[1:]
shutil.copytree(source, lab, symlinks=True, dirs_exist_ok=True)
os.chdir(lab)
for folder in sites.split(os.pathsep):
    site.addsitedir(folder)
sys.argv = ["ipykernel_launcher", *args]
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""


def kernel_spec() -> dict:
    """The kernelspec (``kernel.json``) whose kernel is this launcher."""
    return {
        "argv": [sys.executable, "-m", "grader.course.nbkernel", "-f", "{connection_file}"],
        "display_name": "infra-lab grading (sandboxed Python)",
        "language": "python",
        "interrupt_mode": "message",  # the launcher is not the kernel: no signal reaches it
        "metadata": {"debugger": False},
    }


def site_folders() -> list[str]:
    """The staff environment's package folders the kernel needs (ipykernel and the rest)."""
    found = []
    for entry in sys.path:
        path = Path(entry).resolve() if entry else None
        wanted = path and path.name in ("site-packages", "dist-packages") and path.is_dir()
        if wanted and str(path) not in found:
            found.append(str(path))
    for folder in found:
        if CODE_ROOT.is_relative_to(folder):  # a non-editable install: the package is inside
            raise SandboxError(
                f"{folder} holds the staff package; install it editable (pip install -e) so "
                "that the kernel's packages do not include it"
            )
    return found


def unreachable_site_folder() -> str | None:
    """The first of ``site_folders()`` that a dedicated uid cannot reach (a virtualenv below a
    folder other users cannot enter, such as ``/root``), or None. As root the kernel runs as
    such a uid and refuses to start while one exists."""
    return next((f for f in site_folders() if not reachable_by_others(Path(f))), None)


def _copy_notebook_folder(folder: Path, dest: Path) -> None:
    """``folder`` (the notebook's) copied without following links, readable by any uid,
    refused when it would not fit the kernel's working copy."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    if total > (LAB_MB << 20) // 2:
        raise SandboxError(f"{folder} holds {total >> 20} MiB; the kernel's copy takes {LAB_MB}")
    shutil.copytree(folder, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for root, _, files in os.walk(dest):
        os.chmod(root, 0o755)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o644)


def _socket_dir(info: dict) -> Path:
    """The private folder of an ``ipc`` kernel's sockets (made by ``SandboxKernelManager``)."""
    folder = Path(info["ip"]).parent
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise SandboxError(f"{folder}: the socket folder must be a private folder of ours")
    return folder


def bwrap_command(
    plan, case: Path, connection: Path, sockets: Path | None, extra: list[str]
) -> list[str]:
    """bubblewrap's command line for the kernel (the sandbox's, plus the kernel's mounts)."""
    sites = site_folders()
    inner = [plan.python.path, "-I", "-B", "-c", BOOT, SOURCE, LAB, os.pathsep.join(sites)]
    inner += ["-f", CONNECTION, *extra]
    command = plan.bwrap_command(case, inner, LIMITS)
    chdir = command.index("--chdir")
    command[chdir + 1] = LAB  # the kernel runs in its working copy
    mounts = []
    for folder in sites:
        mounts += ["--ro-bind", folder, folder]
    mounts += ["--size", str(LAB_MB << 20), "--tmpfs", LAB]
    # multiprocessing's locks (sweep.py's pool) need a writable /dev/shm: a small one of its own
    mounts += ["--size", str(SHM_MB << 20), "--tmpfs", "/dev/shm"]
    mounts += ["--ro-bind", str(connection), CONNECTION]
    if sockets is not None:
        mounts += ["--bind", str(sockets), SOCKETS]
    else:
        mounts += ["--share-net"]  # tcp: the client reaches the kernel's ports on the host
    # after every mount of the sandbox's own (a site folder below /tmp must not be hidden by
    # its /tmp), before the read-only remounts it does last, and before the command
    end = command.index("--")
    at = command.index("--remount-ro", 0, end) if "--remount-ro" in command[:end] else end
    return [*command[:at], *mounts, *command[at:]]


def _same_python(path: str) -> None:
    """The sandbox's Python must load the compiled parts of the staff packages."""
    code = "import sys; print(*sys.version_info[:2])"
    done = subprocess.run([path, "-I", "-c", code], capture_output=True, text=True, check=False)
    if done.stdout.split() != [str(v) for v in sys.version_info[:2]]:
        raise SandboxError(
            f"the sandbox's Python {path} is not Python {sys.version_info[0]}."
            f"{sys.version_info[1]} like the staff environment; the kernel cannot load ipykernel"
        )


def run_kernel(connection_file: Path, extra: list[str]) -> int:
    """Start the sandboxed kernel for ``connection_file`` and wait for it; its exit status."""
    plan = current_plan()
    if plan.mode != "bwrap":
        raise SandboxError(
            "the grading kernel needs bubblewrap (apt-get install bubblewrap); without it a "
            "notebook would run with the grading user's rights"
        )
    _same_python(plan.python.path)
    info = json.loads(connection_file.read_text(encoding="utf-8"))
    sockets = _socket_dir(info) if info.get("transport") == "ipc" else None
    notebook_folder = Path.cwd()
    with contextlib.ExitStack() as stack:
        uid = stack.enter_context(reserved_uid()) if plan.drop_uid else None
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=scratch_dir())))
        case, connection = root / "lab", root / "connection.json"
        _copy_notebook_folder(notebook_folder, case)
        inside = info if sockets is None else {**info, "ip": f"{SOCKETS}/{Path(info['ip']).name}"}
        connection.write_text(json.dumps(inside), encoding="utf-8")
        os.chmod(connection, 0o600)
        if uid is not None:
            os.chmod(root, 0o711)
            hand_over([connection] if sockets is None else [connection, sockets], uid)
            if (folder := unreachable_site_folder()) is not None:
                raise SandboxError(f"{folder} cannot be read by the kernel's uid (chmod o+rx)")
        command = bwrap_command(plan, case, connection, sockets, extra)
        prefix, preexec = launcher(LIMITS, uid, 0 if uid is not None else own_tasks())
        child = subprocess.Popen(
            [*prefix, *command],
            env={},
            cwd="/",
            start_new_session=True,
            preexec_fn=preexec,  # noqa: PLW1509 - only without util-linux
        )
        if uid is not None and sockets is not None:
            _seal(info, sockets, child)
        return _wait(child, uid)


def _seal(info: dict, sockets: Path, child: subprocess.Popen) -> None:
    """Once the kernel has made its sockets, take its socket folder back: the kernel's uid can
    no longer write there (the sockets stay usable), so nothing it writes reaches the host's
    disk. Gives up, leaving the folder as it is, if the kernel ends or takes a minute."""
    ports = [info[name] for name in PORTS]
    deadline = time.monotonic() + SEAL_WAIT_S
    while time.monotonic() < deadline and child.poll() is None:
        if all(os.path.exists(f"{info['ip']}-{port}") for port in ports):
            os.chown(sockets, os.geteuid(), os.getegid())
            os.chmod(sockets, 0o755)
            return
        time.sleep(0.05)


def _wait(child: subprocess.Popen, uid: int | None) -> int:
    """Wait for the kernel; SIGTERM to the launcher ends it. Then nothing of it is left."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts travel as messages
    try:
        return child.wait()
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        if uid is not None:
            kill_uid(uid)
        child.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.course.nbkernel", description=__doc__)
    parser.add_argument("-f", dest="connection_file", required=True, type=Path)
    args, extra = parser.parse_known_args(argv)
    try:
        return run_kernel(args.connection_file, extra)
    except (SandboxError, OSError, ValueError) as exc:
        print(f"infralab kernel: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
