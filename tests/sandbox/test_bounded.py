"""Every child bounded and gone (issue 31): one attack per kind of kernel object a child could
make that outlives it or holds memory its limits do not count, in every isolation mode.

Each attack is a ``policies.py`` that makes its object at import, reports what the kernel
answered (``ATTACK {json}`` on stdout) and exits; the test then looks at the host for what it
made. Modes: ``bwrap`` and ``rlimits`` as ``conftest.mode`` runs them (``+uid`` as root), and
``bwrap-user``: the grader itself started as an unprivileged user (``nobody``), so that
bubblewrap runs without a dedicated uid, the mode of a TA laptop.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import _in_mode, as_root, available_modes, readable_code

from grader.labfolder import LAB_PREFIX, assemble
from grader.sandbox import Limits, confine, host, run_simulation, seccomp, uids
from grader.tempfolders import hold_folder
from grader.units import REPO_ROOT

LIMITS = Limits(wall_s=15, submission_s=40, cpu_s=5, memory_mb=512)
NOBODY = 65534
USER_PYTHON = "/usr/bin/python3"  # an interpreter the unprivileged grader can run

PRELUDE = """
import ctypes, errno, json, os, platform, socket, sys, time
TOKEN = {token!r}
libc = ctypes.CDLL(None, use_errno=True)

def report(outcome, **facts):
    print("ATTACK " + json.dumps({{"outcome": outcome, "uid": os.getuid(), **facts}}), flush=True)

def made(call):
    try:
        call()
        return "made"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))

def c(result):
    return "made" if result not in (-1, None) else errno.errorcode[ctypes.get_errno()]

def write(path):
    with open(path, "w") as handle:
        handle.write("stash " * 1000)

def daemon(body):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            body()
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", TOKEN])
        os._exit(0)
    time.sleep(0.3)
"""

FILE_PLACES = {
    "root": "/infralab-stash-{token}",
    "dev_shm": "/dev/shm/infralab-stash-{token}",
    "var_tmp": "/var/tmp/infralab-stash-{token}",
    "tmp": "/tmp/infralab-stash-{token}",
    "run_lock": "/run/lock/infralab-stash-{token}",
}
NR = {"x86_64": {"add_key": 248}, "aarch64": {"add_key": 217}}[platform.machine()]
ATTACKS = {
    **{
        f"file_{place}": f"report(made(lambda: write({path!r}.format(token=TOKEN))))"
        for place, path in FILE_PLACES.items()
    },
    "posix_shm": "import _posixshmem\n"
    "report(made(lambda: _posixshmem.shm_open('/infralab-' + TOKEN, os.O_CREAT | os.O_RDWR)))",
    "posix_semaphore": "import _multiprocessing\n"
    "report(made(lambda: _multiprocessing.SemLock(1, 1, 1, '/infralab-' + TOKEN, False)))",
    "sysv_shm": "report(c(libc.shmget(0, 1 << 20, 0o1666)))",
    "sysv_msg": "report(c(libc.msgget(0, 0o1666)))",
    "sysv_sem": "report(c(libc.semget(0, 4, 0o1666)))",
    "posix_mq": "libc.mq_open.restype = ctypes.c_int\n"
    "report(c(libc.mq_open(('/infralab-' + TOKEN).encode(), os.O_CREAT | os.O_RDWR, 0o666, None)))",
    "memfd": "report(made(lambda: os.write(os.memfd_create(TOKEN), b'x' * (1 << 20))))",
    "key": f"report(c(libc.syscall({NR['add_key']}, b'user', TOKEN.encode(), b'stash', 5, -4)))",
    "io_uring": "report(c(libc.syscall(425, 8, ctypes.create_string_buffer(120))))",
    "user_namespace": "report(c(libc.unshare(0x10000000 | 0x00020000)))",
    "mount_tmpfs": "report(c(libc.mount(b'none', b'/tmp', b'tmpfs', 0, b'size=1g')))",
    "daemon": "daemon(lambda: None)\nreport('made')",
    "abstract_socket": "server = socket.socket(socket.AF_UNIX)\n"
    "daemon(lambda: (server.bind('\\0infralab-' + TOKEN), server.listen()))\n"
    "report('made')",
    "inotify": "daemon(lambda: libc.inotify_add_watch(libc.inotify_init(), b'/', 0xfff))\n"
    "report('made')",
}
# What the kernel must answer inside each mode family ("made": allowed, then removed).
REFUSED = {"EPERM"}
EXPECTED = {
    "file_root": {"bwrap": {"EROFS"}, "rlimits": {"EACCES"}},
    "file_dev_shm": {"bwrap": {"EROFS"}, "rlimits": {"made"}},
    "file_var_tmp": {"bwrap": {"ENOENT", "EROFS"}, "rlimits": {"made"}},
    "file_tmp": {"bwrap": {"made"}, "rlimits": {"made"}},
    "file_run_lock": {"bwrap": {"ENOENT", "EROFS"}, "rlimits": {"made"}},
    "posix_shm": {"bwrap": {"EROFS"}, "rlimits": {"made"}},
    "posix_semaphore": {"bwrap": {"EROFS"}, "rlimits": {"made"}},
    "daemon": {"bwrap": {"made"}, "rlimits": {"made"}},
    "abstract_socket": {"bwrap": {"made"}, "rlimits": {"made"}},
    "inotify": {"bwrap": {"made"}, "rlimits": {"made"}},
}


@pytest.fixture(params=["bwrap", "rlimits", "bwrap-user"])
def any_mode(request, monkeypatch, unit):
    """``conftest.mode`` plus ``bwrap-user``: the grader started as ``nobody``."""
    if request.param != "bwrap-user":
        yield from _in_mode(request.param, monkeypatch, unit)
        return
    if not as_root() or "bwrap" not in available_modes():
        pytest.skip("needs root (to start the grader as nobody) and a working bubblewrap")
    if not os.access(USER_PYTHON, os.X_OK):
        pytest.skip(f"{USER_PYTHON} is missing: no interpreter an unprivileged user can run")
    yield request.param


_LABS: dict[str, Path] = {}


def lab_of(unit) -> Path:
    """The unit's lab folder, assembled once for this module where any user can read it (the
    unprivileged grader of ``bwrap-user`` reads it as nobody); removed with the module."""
    if unit.id not in _LABS:
        holder = Path(tempfile.mkdtemp(prefix="infralab-bounded-lab-"))
        holder.chmod(0o755)
        _LABS[unit.id] = assemble(unit, holder / "lab")
    return _LABS[unit.id]


def staff_code() -> Path:
    """The staff packages where nobody can import them, wherever the checkout lies (made once
    for this module, removed with it)."""
    if "code" not in _LABS:
        holder = Path(tempfile.mkdtemp(prefix="infralab-bounded-code-"))
        holder.chmod(0o755)
        _LABS["code"] = readable_code(holder / "code")
    return _LABS["code"]


@pytest.fixture(scope="module", autouse=True)
def _remove_labs():
    yield
    for lab in _LABS.values():
        shutil.rmtree(lab.parent, ignore_errors=True)
    _LABS.clear()


def run_as(mode: str, unit, source: str, limits: Limits = LIMITS) -> str:
    """The child's stdout after grading ``source`` once in ``mode``."""
    if mode != "bwrap-user":
        trace = lab_of(unit) / "traces" / "mixed.json"
        files = {"policies.py": source.encode()}
        result = run_simulation(lab_of(unit), files, trace, ["--policy", "fcfs"], limits)
        return result.stdout
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", USER_PYTHON],
        input=USER_GRADER.format(repo=str(staff_code()), lab=str(lab_of(unit)), limits=limits)
        + f"\nprint(grade({source!r}))\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.splitlines()[-1])
    assert facts["isolation"] == "bwrap"
    return facts["stdout"]


USER_GRADER = """
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from grader.sandbox import Limits, run_simulation
lab = Path({lab!r})

def grade(source):
    r = run_simulation(lab, {{"policies.py": source.encode()}}, lab / "traces/mixed.json",
                       ["--policy", "fcfs"], {limits!r})
    return json.dumps({{"stdout": r.stdout, "isolation": r.isolation}})
"""


def attack(mode: str, unit, kind: str) -> tuple[dict, str]:
    token = secrets.token_hex(6)
    source = PRELUDE.format(token=token) + ATTACKS[kind] + "\nos._exit(0)\n"
    stdout = run_as(mode, unit, source)
    lines = [line for line in stdout.splitlines() if line.startswith("ATTACK ")]
    assert lines, stdout
    return json.loads(lines[-1][len("ATTACK ") :]), token


@pytest.mark.parametrize("kind", sorted(ATTACKS))
def test_no_object_of_a_case_outlives_it(unit, any_mode, kind):
    facts, token = attack(any_mode, unit, kind)
    family = "rlimits" if any_mode == "rlimits" else "bwrap"
    assert facts["outcome"] in EXPECTED.get(kind, {}).get(family, REFUSED), facts
    dedicated = uids.UID_RANGE[0] <= facts["uid"] < uids.UID_RANGE[1]
    assert dedicated == (as_root() and any_mode != "bwrap-user")
    # nothing of it is left on the host
    for place in FILE_PLACES.values():
        assert not os.path.lexists(place.format(token=token))
    assert not [n for n in os.listdir("/dev/shm") if token in n]
    assert _gone(token)
    if dedicated:
        assert _processes_of(facts["uid"]) == []
        assert _ipc_of(facts["uid"]) == []
    probe = socket.socket(socket.AF_UNIX)
    with pytest.raises(OSError):
        probe.connect("\0infralab-" + token)
    probe.close()


def _gone(token: str, grace_s: float = 2.0) -> bool:
    """No process carries ``token`` (a PID namespace's last processes may take a moment to be
    reaped by the kernel after its init died: bubblewrap without a dedicated uid)."""
    deadline = time.monotonic() + grace_s
    while _processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _processes_with(token) == []


def _processes_with(token: str) -> list[str]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if token.encode() in Path(entry.path, "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
    return found


def _processes_of(uid: int) -> list[str]:
    live = []
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    live.append(entry.name)
        except OSError:
            continue
    return live


def _ipc_of(uid: int) -> list[str]:
    return [
        f"{kind}:{i}" for kind, column, _ in uids.SYSV_IPC for i in uids._ipc_ids(kind, column, uid)
    ]


def test_the_child_cannot_fill_memory_through_root_dev_or_tmp(unit, any_mode):
    """Every writable mount has a size: the root and /dev refuse writes, /tmp stops at its
    size (bubblewrap); without bubblewrap the same writes land in the host's folders, one file
    at most ``file_mb``, and are removed with the case."""
    token = secrets.token_hex(6)
    source = PRELUDE.format(token=token) + textwrap.dedent("""
        written = {}
        for place in ("/", "/dev", "/dev/shm", "/tmp"):
            total = 0
            try:
                with open(os.path.join(place, "infralab-fill-" + TOKEN), "wb") as handle:
                    while total < (512 << 20):
                        total += handle.write(b"x" * (1 << 20))
            except OSError as exc:
                pass
            written[place] = total
        report("made", written=written)
        os._exit(0)
    """)
    limits_tmp = LIMITS.tmp_mb << 20
    stdout = run_as(any_mode, unit, source)
    facts = json.loads(stdout.split("ATTACK ", 1)[1].splitlines()[0])
    if any_mode == "rlimits":
        assert all(size <= LIMITS.file_mb << 20 for size in facts["written"].values())
    else:
        assert facts["written"]["/"] == facts["written"]["/dev"] == 0
        assert facts["written"]["/dev/shm"] == 0
        assert 0 < facts["written"]["/tmp"] <= limits_tmp
    for place in ("/", "/dev", "/dev/shm", "/tmp"):
        assert not os.path.lexists(os.path.join(place, "infralab-fill-" + token))


# --- another case's files ---------------------------------------------------------------

# The victim stays while the test's gate file exists, where it can see it (the host's /tmp:
# rlimits), so that the thief looks while it is there however slowly either starts; elsewhere it
# stays 5 s (the thief's finding nothing proves the point without it).
VICTIM = """
import os, time
SECRET = "victim-{token}"
try:
    open("/tmp/infralab-victim-up-{token}", "w").close()
except OSError:
    pass
deadline = time.monotonic() + 5
while time.monotonic() < deadline or os.path.exists("/tmp/infralab-victim-gate-{token}"):
    time.sleep(0.05)
"""
THIEF = """
import glob, json, os, time
TOPS = {tops!r}
seen, read, deadline = set(), [], time.monotonic() + 3
while time.monotonic() < deadline:
    for top in TOPS:
        for folder in glob.glob(top + "/infralab-case-*"):
            seen.add(folder)
            found = glob.glob(folder + "/**/policies.py", recursive=True)
            for path in [*found, folder + "/work/lab/policies.py"]:  # the layout is known
                try:
                    with open(path) as handle:
                        if "vic" + "tim-" in handle.read():  # not in this file's text
                            read.append(path)
                except OSError:
                    pass
    time.sleep(0.05)
print("THIEF " + json.dumps({{"seen": sorted(seen), "read": read}}), flush=True)
os._exit(0)
"""


def test_a_case_cannot_read_a_concurrent_cases_files(unit, any_mode):
    """Finding 3: a case graded at the same time as another looks for the other's case folder
    and its ``policies.py``; it finds nothing it can read."""
    token = secrets.token_hex(6)
    gate, up = Path(f"/tmp/infralab-victim-gate-{token}"), Path(f"/tmp/infralab-victim-up-{token}")
    gate.touch(mode=0o644)
    shared_tmp = any_mode == "rlimits"  # the victim's /tmp is the host's
    stays = Limits(wall_s=120, submission_s=120, cpu_s=5, memory_mb=512)
    victim = threading.Thread(
        target=run_as, args=(any_mode, unit, VICTIM.format(token=token), stays)
    )
    victim.start()
    try:
        deadline = time.monotonic() + 60  # a bound for a broken sandbox, not a speed guess
        while time.monotonic() < deadline and not (
            up.exists() if shared_tmp else _processes_with("_infralab_runner")
        ):
            time.sleep(0.05)
        tops = sorted({"/dev/shm", "/tmp", host.scratch_dir() or tempfile.gettempdir()})
        stdout = run_as(any_mode, unit, THIEF.format(tops=tops))
    finally:
        gate.unlink()
        victim.join()
        up.unlink(missing_ok=True)
    facts = json.loads(stdout.split("THIEF ", 1)[1].splitlines()[0])
    assert facts["read"] == []
    if any_mode == "rlimits" and as_root():  # the victim's folder was there to be tried
        assert facts["seen"], "the thief saw no case folder: the attack proves nothing"


def test_case_folders_belong_to_the_child_alone(unit, solution):
    """Without bubblewrap only the child's gid passes through the case folder; the
    submission's files are 0640 (0600 without a dedicated uid), never world-readable."""
    from grader.sandbox import launch as launch_module

    root = Path(tempfile.mkdtemp())
    try:
        if as_root():
            files = {"policies.py": solution}
            case = launch_module.prepare_case(root, lab_of(unit), files, {}, 201)
            info = (case / "policies.py").stat()
            assert stat.S_IMODE(info.st_mode) == 0o640 and info.st_gid == 201
            shutil.rmtree(case)
        case = launch_module.prepare_case(root, lab_of(unit), {"policies.py": solution}, {})
        assert stat.S_IMODE((case / "policies.py").stat().st_mode) == 0o600
    finally:
        shutil.rmtree(root)


# --- SIGTERM to the grader --------------------------------------------------------------

LINGER = """
import os, sys, time
TOKEN = {token!r}
for place in ("/tmp", "/dev/shm", "/var/tmp"):
    try:
        open(os.path.join(place, "infralab-stash-" + TOKEN), "w").write("stash")
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        marker = "linger-" + TOKEN  # only in this process's command line, not the grader's
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", marker])
    os._exit(0)
time.sleep(60)
"""
GRADER = """
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from grader.sandbox import Limits, run_simulation
lab = Path({lab!r})
run_simulation(lab, {{"policies.py": {source!r}.encode()}}, lab / "traces/mixed.json",
               ["--policy", "fcfs"],
               Limits(wall_s=60, submission_s=90, cpu_s=5))
"""


def test_sigterm_to_the_grader_leaves_nothing(unit, any_mode):
    """A grader stopped by SIGTERM while a case runs kills the case's processes and removes
    its files and folders before it exits."""
    token = secrets.token_hex(6)
    scratch = Path(tempfile.mkdtemp(prefix="infralab-sigterm-"))
    scratch.chmod(0o711)  # the child's uid passes through to its output folder
    script = GRADER.format(
        repo=str(staff_code()), lab=str(lab_of(unit)), source=LINGER.format(token=token)
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": str(scratch)}
    env[host.MODE_ENV] = "rlimits" if any_mode == "rlimits" else "bwrap"
    command = [sys.executable, "-c", script]
    if any_mode == "bwrap-user":
        os.chown(scratch, NOBODY, NOBODY)
        setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        command = [*setpriv, USER_PYTHON, "-c", script]
    grader = subprocess.Popen(command, env=env, cwd="/", stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60  # a bound for a broken sandbox, not a speed guess
        while time.monotonic() < deadline and not _processes_with(f"linger-{token}"):
            time.sleep(0.05)
        assert _processes_with(f"linger-{token}"), "the case never started"
        time.sleep(0.3)
        grader.send_signal(signal.SIGTERM)
        code = grader.wait(timeout=20)
        assert code == 128 + signal.SIGTERM, grader.stderr.read().decode()[-2000:]
        assert _gone(f"linger-{token}")
        for place in ("/tmp", "/dev/shm", "/var/tmp"):
            assert not os.path.lexists(f"{place}/infralab-stash-{token}")
        assert list(scratch.iterdir()) == []
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait()
        shutil.rmtree(scratch, ignore_errors=True)


# --- the grader's own second line: uid cleanup --------------------------------------------

needs_root = pytest.mark.skipif(not as_root(), reason="a dedicated uid needs root")


def _as_uid(uid: int, code: str) -> None:
    """Run ``code`` (Python, no filter) as ``uid`` in a forked child that waits for it."""
    python = host.current_plan().python.path
    subprocess.run(
        [python, "-c", code], user=uid, group=uid, extra_groups=[], cwd="/", env={}, check=True
    )


@needs_root
def test_the_grader_removes_a_uids_ipc_objects_and_files_at_any_depth():
    """The second line behind ``confine``: without a filter, a child uid's System V objects
    and its files below world-writable folders are removed by ``uids``."""
    nest = Path(tempfile.mkdtemp(prefix="infralab-nest-"))
    nest.chmod(0o1777)
    with uids.reserved_uid() as uid:
        try:
            _as_uid(
                uid,
                textwrap.dedent(f"""
                import ctypes
                libc = ctypes.CDLL(None, use_errno=True)
                assert libc.shmget(0, 4096, 0o1600) >= 0
                assert libc.msgget(0, 0o1600) >= 0
                assert libc.semget(0, 1, 0o1600) >= 0
                open({str(nest / "deep")!r}, "w").write("stash")
            """),
            )
            assert len(_ipc_of(uid)) == 3
            uids.remove_ipc_of(uid)
            uids.remove_files_of(uid)
            assert _ipc_of(uid) == []
            assert not (nest / "deep").exists()
        finally:
            uids.remove_ipc_of(uid)
            shutil.rmtree(nest, ignore_errors=True)


@needs_root
def test_what_a_killed_grader_left_is_cleaned_by_the_next():
    """A uid nobody holds (its grader was killed outright) loses its processes, files and IPC
    objects at the next grader's start; a uid a live grader holds keeps them."""
    python = host.current_plan().python.path
    stash = f"/tmp/infralab-abandoned-{secrets.token_hex(6)}"
    spawn = {"extra_groups": [], "cwd": "/", "env": {}}
    with uids.reserved_uid() as abandoned:
        pass  # reserved, then let go, as by a grader that was killed
    with uids.reserved_uid() as held:
        sleeper = subprocess.Popen(
            [python, "-c", f"open({stash!r}, 'w'); import time; time.sleep(60)"],
            user=abandoned,
            group=abandoned,
            **spawn,
        )
        keeper = subprocess.Popen(
            [python, "-c", "import time; time.sleep(60)"], user=held, group=held, **spawn
        )
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(stash) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert abandoned in uids.clean_abandoned()
            sleeper.wait(timeout=10)
            assert not os.path.exists(stash)
            assert _processes_of(abandoned) == []
            assert keeper.poll() is None  # held by this grader: untouched
        finally:
            for child in (sleeper, keeper):
                child.kill()
                child.wait()
            uids.kill_uid(abandoned)


@pytest.mark.parametrize("prefix", [host.CASE_PREFIX, host.TEMPLATE_PREFIX, LAB_PREFIX])
def test_unheld_stale_folders_are_swept_and_held_ones_kept(monkeypatch, prefix):
    top = Path(tempfile.mkdtemp(prefix="infralab-sweep-"))
    monkeypatch.setattr(host, "MEMORY_SCRATCH", str(top))
    try:
        stale, live, fresh = (top / f"{prefix}{n}" for n in ("stale", "live", "fresh"))
        for folder in (stale, live, fresh):
            (folder / "work").mkdir(parents=True)
            (folder / "work" / "policies.py").write_text("secret")
        old = time.time() - host.STALE_S - 5
        for folder in (stale, live):
            os.utime(folder, (old, old))
        fd = hold_folder(live)
        try:
            host.sweep_folders()
        finally:
            os.close(fd)
        assert not stale.exists()
        assert live.exists() and fresh.exists()
    finally:
        shutil.rmtree(top)


BUILD_AND_WAIT = """
import sys, time
from grader import labfolder
from grader.units import load_unit
print(labfolder.built(load_unit("unit07")), flush=True)
time.sleep(120)
"""


def test_a_killed_graders_lab_folder_is_swept_and_a_live_ones_kept(tmp_path):
    """A grader killed outright (SIGKILL: no ``atexit``) leaves its assembled lab folder; the next
    grader's sweep removes it once it is stale. While its process lives, the folder is held and
    no sweep touches it, however old."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    builders = [
        subprocess.Popen([sys.executable, "-c", BUILD_AND_WAIT], stdout=subprocess.PIPE, env=env)
        for _ in range(2)
    ]
    try:
        killed, alive = (Path(b.stdout.readline().decode().strip()).parent for b in builders)
        builders[0].kill()
        builders[0].wait()
        old = time.time() - host.STALE_S - 5
        for folder in (killed, alive):
            assert folder.name.startswith(f"{LAB_PREFIX}unit07-") and folder.is_dir()
            os.utime(folder, (old, old))
        saved = tempfile.tempdir
        tempfile.tempdir = str(tmp_path)  # where the builders made them
        try:
            host.sweep_folders()
        finally:
            tempfile.tempdir = saved
        assert not killed.exists()
        assert alive.is_dir() and (alive / "lab" / "simulate.py").is_file()
    finally:
        for builder in builders:
            builder.kill()
            builder.wait()


def test_the_filter_has_every_denied_call_on_every_machine():
    """Each supported machine's table names every refused call, and the filter that this host
    installs refuses them (a forked process tries two)."""
    for machine in seccomp.TABLES:
        numbers = seccomp.TABLES[machine][1]
        assert set(seccomp.DENIED) <= set(numbers), machine
        assert len(seccomp.program(machine)) < 255  # every jump fits in a byte
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            confine.apply(seccomp.filter_bytes())
            libc = ctypes.CDLL(None, use_errno=True)
            refused = libc.shmget(0, 4096, 0o1600) == -1 and ctypes.get_errno() == 1
            try:
                os.memfd_create("x")
            except PermissionError:
                code = 0 if refused else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_every_proof_the_doc_names_exists():
    """docs/sandbox.md's "Every child bounded and gone" names only tests that exist: each
    ``[mode-kind]`` is an attack of ``ATTACKS``, each ``test_...`` a test of tests/sandbox/."""
    doc = (REPO_ROOT / "docs" / "sandbox.md").read_text()
    section = doc.split("## Every child bounded and gone", 1)[1].split("\n## ", 1)[0]
    kinds = set(re.findall(r"`\[mode-(\w+)\]`", section))
    assert kinds and kinds <= set(ATTACKS), kinds - set(ATTACKS)
    assert set(ATTACKS) <= kinds, f"attacks the doc does not list: {set(ATTACKS) - kinds}"
    sources = "\n".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    names = set(re.findall(r"(test_\w+)(?:\[mode\])?`", section))
    assert names
    missing = [n for n in names if f"def {n}(" not in sources]
    assert missing == []
