"""The child process sandbox on its own: limits, isolation, output checks (no grading here)."""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ADVERSARIAL, as_root, available_modes, readable_code
from labtools import WALL_CLOCK

from grader import sandbox
from grader.grading.limits import hidden_material
from grader.labfolder import assemble, built
from grader.sandbox import Limits, run_simulation
from grader.units import REPO_ROOT

FAST = Limits(wall_s=10, cpu_s=1, memory_mb=512)


def run(unit, source: bytes | str, limits=FAST, trace="mixed", argv=("--policy", "both")):
    if isinstance(source, str):
        source = source.encode()
    trace_path = unit.lab_dir / "traces" / f"{trace}.json"
    return run_simulation(built(unit), {"policies.py": source}, trace_path, list(argv), limits)


def test_correct_solution_runs_and_reports_mode(unit, solution, mode):
    result = run(unit, solution)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.output)
    assert [r["policy"] for r in doc["runs"]] == ["fcfs", "chunked"]
    expected = mode + ("+uid" if as_root() else "")
    assert result.isolation == expected == sandbox.isolation_mode()


PROBE = """
import json, os, resource, socket, sys
facts = {"uid": os.getuid(), "readable": [], "listable": [], "cwd": os.getcwd()}
for path in PATHS:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        facts["readable"].append(path)
    except OSError:
        pass
for path in DIRS:
    try:
        os.listdir(path)
        facts["listable"].append(path)
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
    facts["network"] = True
except OSError:
    facts["network"] = False
facts["limits"] = {name: resource.getrlimit(getattr(resource, name))[1]
                   for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE",
                                "RLIMIT_NPROC")}
facts["env"] = sorted(os.environ)
print("FACTS" + json.dumps(facts))
sys.exit(0)
"""


def probe(unit, secrets: list[Path], dirs: list[Path]):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        source = textwrap.dedent(PROBE)
        source = source.replace("PATHS", repr([str(p) for p in secrets]))
        source = source.replace("DIRS", repr([str(p) for p in dirs]))
        source = source.replace("PORT", str(server.getsockname()[1]))
        result = run(unit, source)
    line = next(x for x in result.stdout.splitlines() if x.startswith("FACTS"))
    return json.loads(line[len("FACTS") :])


def test_bwrap_hides_the_repo_and_the_network(unit, monkeypatch):
    if "bwrap" not in available_modes():
        pytest.skip("bubblewrap is not installed or cannot create namespaces on this host")
    monkeypatch.setenv(sandbox.MODE_ENV, "bwrap")
    monkeypatch.setenv("INFRALAB_PROBE_SECRET", "leak-me")
    secrets = [
        unit.solutions_dir / "policies.py",
        REPO_ROOT / "labs" / "unit07" / "unit.yaml",
        REPO_ROOT / "grader" / "sandbox" / "__init__.py",
        unit.lab_dir / "tests" / "expected" / "mixed.json",
        Path("/etc/passwd"),
    ]
    facts = probe(unit, secrets, [REPO_ROOT, Path("/root"), Path("/home"), Path("/tmp/..")])
    assert facts["readable"] == []
    assert facts["network"] is False
    assert facts["cwd"] == sandbox.CASE_DIR
    assert facts["listable"] == ["/tmp/.."]  # the sandbox's own root: /usr, /lab, /out ...
    assert "INFRALAB_PROBE_SECRET" not in facts["env"]
    if as_root():
        assert facts["uid"] >= sandbox.UID_RANGE[0]


def test_a_child_told_where_the_hidden_material_lies_reads_none_of_it(unit, mode):
    """Every file of the grader's own hidden material (hidden traces, golden files, solutions),
    named to the child by its path, is unreadable in every mode, wherever the checkout lies:
    what ``read_secrets`` hunts for, without the hunt whose outcome depends on the host."""
    folders = hidden_material(unit)
    files = [p for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()]
    assert files
    facts = probe(unit, files, folders)
    assert facts["readable"] == [] and facts["listable"] == []


def test_fallback_child_is_unprivileged_and_limited(unit, mode, tmp_path, monkeypatch):
    """Both modes: rlimits, scrubbed env; as root a dedicated uid that cannot read private files."""
    monkeypatch.setenv("INFRALAB_PROBE_SECRET", "leak-me")
    private = tmp_path / "private"  # what the grader keeps to itself: a 0700 folder
    private.mkdir(mode=0o700)
    (private / "golden.json").write_text("{}")
    facts = probe(unit, [private / "golden.json"], [tmp_path.parent])
    assert facts["limits"]["RLIMIT_CPU"] == math.ceil(FAST.cpu_s) + 1
    assert facts["limits"]["RLIMIT_AS"] == FAST.memory_mb << 20
    assert facts["limits"]["RLIMIT_FSIZE"] == FAST.file_mb << 20
    assert facts["limits"]["RLIMIT_NOFILE"] == FAST.open_files
    assert "INFRALAB_PROBE_SECRET" not in facts["env"]
    if as_root():
        assert facts["uid"] >= sandbox.UID_RANGE[0]
        assert facts["readable"] == []
        assert facts["listable"] == []


@WALL_CLOCK
def test_infinite_loop_stops_at_cpu_limit(unit, mode):
    started = time.monotonic()
    result = run(unit, (ADVERSARIAL / "infinite_loop.py").read_bytes())
    assert time.monotonic() - started < 8
    assert result.output is None
    assert result.limit in ("CPU time", "CPU time or memory")
    assert "limit exceeded" in result.summary


@WALL_CLOCK
def test_sleeping_child_stops_at_wall_limit(unit, mode):
    source = "import time\ntime.sleep(60)\n"
    started = time.monotonic()
    result = run(unit, source, limits=Limits(wall_s=1, cpu_s=5))
    assert time.monotonic() - started < 5
    assert result.timed_out and result.returncode is None and result.limit == "wall time"


def test_memory_bomb_stops_at_address_space_limit(unit, mode):
    limits = Limits(wall_s=20, cpu_s=5, memory_mb=256)  # CPU to spare: memory must stop it
    result = run(unit, (ADVERSARIAL / "memory_bomb.py").read_bytes(), limits=limits)
    assert result.output is None
    assert result.limit in ("memory", "CPU time or memory")


def test_fork_bomb_is_bounded_and_cleaned_up(unit, solution, mode):
    limits = Limits(wall_s=20, cpu_s=5, processes=16)
    result = run(unit, (ADVERSARIAL / "fork_bomb.py").read_bytes(), limits=limits)
    assert result.returncode == 0, result.stderr
    forked, uid = map(int, re.search(r"forked (\d+) children as uid (\d+)", result.stdout).groups())
    assert forked < 16
    assert json.loads(result.output)["runs"]
    if as_root():  # no live process of this child's uid is left (other graders may run)
        assert uid >= sandbox.UID_RANGE[0]
        leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _live(p, uid)]
        assert leftovers == []


def _live(proc: Path, uid: int) -> bool:
    """A running (not zombie) process under ``uid`` (only this test's child: graders that
    run side by side on the host use other uids)."""
    try:
        if proc.stat().st_uid != uid:
            return False
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_stdout_flood_is_cut_and_the_run_survives(unit, mode):
    result = run(unit, (ADVERSARIAL / "stdout_flood.py").read_bytes())
    assert result.returncode == 0
    assert len(result.stdout) <= sandbox.OUTPUT_LIMIT + 100
    assert result.stdout.startswith("[... ")
    assert json.loads(result.output)["runs"]


def test_endless_writer_stops_at_file_size_limit(unit, mode):
    source = "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n"
    result = run(unit, source, limits=Limits(wall_s=20, cpu_s=10, file_mb=2))
    assert result.limit == "file size"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "huge"])
def test_output_that_is_not_a_plain_small_file_is_rejected(unit, mode, kind):
    make = {
        "symlink": "os.symlink('/etc/passwd', out)",
        "fifo": "os.mkfifo(out)",
        "huge": "open(out, 'wb').write(b'x' * (2 << 20))",
    }[kind]
    source = (
        f"import os, sys\nout = sys.argv[sys.argv.index('--output') + 1]\n{make}\nos._exit(0)\n"
    )
    result = run(unit, source, limits=Limits(wall_s=10, cpu_s=5, output_mb=1))
    assert result.output is None
    assert result.output_error
    assert result.returncode == 0


def test_unknown_mode_is_one_clear_error(monkeypatch, unit, solution):
    monkeypatch.setenv(sandbox.MODE_ENV, "docker")
    with pytest.raises(sandbox.SandboxError, match="INFRALAB_SANDBOX must be"):
        run(unit, solution)


def test_sandbox_runs_for_an_unprivileged_grader(unit, solution):
    """The sandbox also works when the grader itself is not root (bwrap or plain rlimits). It
    imports a copy of the staff packages any user can read, so where the checkout lies (below
    /root, say) does not decide the verdict; it reads nothing else of the checkout."""
    if not as_root():
        pytest.skip("needs root to start the grader as an unprivileged user")
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip(f"{python} is missing: no interpreter an unprivileged user can run")
    holder = Path(tempfile.mkdtemp(prefix="infralab-lab-"))  # the unprivileged grader's lab
    holder.chmod(0o755)
    assemble(unit, holder / "lab")
    code = readable_code(holder / "code")
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(code)!r})
        from pathlib import Path
        from grader.sandbox import run_simulation
        lab = Path({str(holder / "lab")!r})
        r = run_simulation(lab, {{"policies.py": {solution!r}}}, lab / "traces/mixed.json",
                           ["--policy", "both"])
        print(json.dumps({{"rc": r.returncode, "iso": r.isolation, "ok": r.output is not None}}))
        """)
    try:
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", script],
            capture_output=True,
            check=False,
            text=True,
            timeout=60,
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        )
    finally:
        shutil.rmtree(holder)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.splitlines()[-1])
    assert facts == {"rc": 0, "iso": facts["iso"], "ok": True}
    assert facts["iso"] in ("bwrap", "rlimits")


STUBBORN = """
import signal

from servesim import Batch


def fcfs(view):
    signal.signal(signal.SIGPROF, signal.SIG_IGN)  # defeats the runner's CPU timer
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # and the soft RLIMIT_CPU
    while True:
        pass


def chunked(view, chunk):
    if view.waiting:
        return Batch.prefill_of(view.waiting[0], min(chunk, view.waiting[0].remaining_prefill))
    return Batch.decode_of(view.running)
"""


def test_batch_child_killed_midway_reruns_the_remaining_cases(unit, mode):
    """A case that defeats the runner's CPU timer is stopped by the parent's per-case wall
    limit; the cases after it still run (in a fresh child) and keep their own results."""
    trace = unit.lab_dir / "traces" / "prefill-only.json"
    runs = [
        sandbox.CaseRun(trace, ["--policy", "fcfs"]),
        sandbox.CaseRun(trace, ["--policy", "chunked", "--chunk", "4"]),
        sandbox.CaseRun(trace, ["--policy", "fcfs"]),
        sandbox.CaseRun(trace, ["--policy", "chunked", "--chunk", "2"]),
    ]
    limits = Limits(wall_s=1.5, cpu_s=0.3)
    results = sandbox.run_cases(built(unit), {"policies.py": STUBBORN.encode()}, runs, limits)
    assert [r.timed_out for r in results] == [True, False, True, False]
    assert [r.output is not None for r in results] == [False, True, False, True]
    assert results[0].limit == "wall time"
    assert results[1].returncode == 0


def test_batch_runner_stops_a_plain_loop_at_its_cpu_share(unit, mode):
    trace = unit.lab_dir / "traces" / "mixed.json"
    source = (
        (ADVERSARIAL / "raise_in_chunked.py")
        .read_text()
        .replace('raise ValueError("chunked scheduling is hard")', "while True:\n        pass")
    )
    runs = [sandbox.CaseRun(trace, ["--policy", p]) for p in ("chunked", "fcfs", "chunked")]
    results = sandbox.run_cases(
        built(unit), {"policies.py": source.encode()}, runs, Limits(wall_s=10, cpu_s=0.3)
    )
    assert [r.limit for r in results] == ["CPU time", None, "CPU time"]
    assert results[1].returncode == 0 and json.loads(results[1].output)["runs"]


FAILS_AT_LINE_8 = """from servesim import Batch

print("imported by", type(__loader__).__name__)


def fcfs(view):
    if view.waiting:
        raise ValueError("boom at line 8")
    return Batch.decode_of(view.running)
"""


def test_each_case_imports_the_submission_afresh_and_its_errors_name_its_lines(unit, mode):
    """The runner compiles the submission once (it runs none of it): every case still imports
    it afresh, a traceback names the student's file and line, and a file that does not compile
    cleanly is imported as it always was, its error or warning in the case's own stderr."""
    trace = unit.lab_dir / "traces" / "mixed.json"
    runs = [sandbox.CaseRun(trace, ["--policy", "fcfs"]) for _ in range(2)]
    results = sandbox.run_cases(built(unit), {"policies.py": FAILS_AT_LINE_8.encode()}, runs)
    for result in results:
        assert result.stdout.count("imported by Precompiled") == 1, result.stdout
        assert re.search(r'policies\.py", line 8, in fcfs\n +raise ValueError', result.stderr)
    broken = run(unit, "def fcfs(view):\n    return (\n", argv=("--policy", "fcfs"))
    assert re.search(r'policies\.py", line 2\n.*\nSyntaxError', broken.stderr, re.S), broken.stderr
    warned = run(unit, FAILS_AT_LINE_8 + "\nSAME = 1 is 1\n", argv=("--policy", "fcfs"))
    assert 'policies.py:11: SyntaxWarning: "is" with a literal' in warned.stderr, warned.stderr
    assert "imported by SourceFileLoader" in warned.stdout


SNOOP = """
import os, sys
from servesim import Batch

mine = sys.argv[sys.argv.index("--trace") + 1]
with open(mine) as handle:
    me = int(handle.read().split("TOKEN-")[1][:2])
later = [f"TOKEN-{n:02d}" for n in range(me + 1, 10)]
found = set()
for top in (os.path.dirname(mine), os.getcwd(), os.environ.get("TMPDIR", "/tmp"), "/tmp"):
    for folder, dirs, files in os.walk(top):
        if top == "/tmp":
            dirs[:] = []  # the host's /tmp in the fallback: its top level only
        for name in files:
            try:
                with open(os.path.join(folder, name), errors="replace") as handle:
                    text = handle.read(1 << 20)
            except OSError:
                continue
            found.update(mark for mark in later if mark in text)
print("ME", me)
print("LATER", sorted(found))
print("STDIN", repr(sys.stdin.read()))


def fcfs(view):
    if view.waiting:
        return Batch.prefill_of(view.waiting[0], view.waiting[0].remaining_prefill)
    return Batch.decode_of(view.running)
"""


def test_batch_case_never_sees_a_later_cases_trace(unit, mode, tmp_path):
    """A case's trace is sent only after the case before it finished: no later trace is in the
    case folder, the output folder, /tmp or stdin (grading puts visible cases first)."""
    token = secrets.token_hex(6)
    runs = []
    for n in range(3):
        doc = json.loads((unit.lab_dir / "traces" / "mixed.json").read_text())
        doc["name"] = f"{token}-{n:02d}"
        path = tmp_path / f"t{n}.json"
        path.write_text(json.dumps(doc))
        runs.append(sandbox.CaseRun(path, ["--policy", "fcfs"]))
    source = SNOOP.replace("TOKEN", token).encode()
    results = sandbox.run_cases(built(unit), {"policies.py": source}, runs, FAST)
    for n, result in enumerate(results):
        assert result.returncode == 0, result.stderr
        lines = dict(line.split(" ", 1) for line in result.stdout.splitlines()[:3])
        assert lines["ME"] == str(n)
        if mode == "bwrap" or as_root():  # a non-root fallback child can read the grader's /tmp
            assert lines["LATER"] == "[]"
        assert lines["STDIN"] == "''"


def test_files_left_in_shared_tmp_are_removed(unit, mode):
    if not as_root():
        pytest.skip("without a dedicated uid the child's files cannot be told from the grader's")
    name = f"infralab-stash-{secrets.token_hex(6)}"
    source = f"open('/tmp/{name}', 'w').write('stash')\nimport os\nos._exit(0)\n"
    run(unit, source)
    assert not Path("/tmp", name).exists()
