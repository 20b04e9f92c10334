"""The notebook kernel's sandbox (``grader.course.nbkernel``) and the scores decided outside it
(``grader.course.nbscores``, ``nbautograde``), without a whole nbgrader course.

The end-to-end attack through ``nbgrader autograde`` is ``test_notebook_attack.py``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import stat
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")

from kernelhost import NEEDS_KERNEL
from nbclient.exceptions import CellTimeoutError
from nbformat.v4 import new_code_cell, new_notebook, new_output
from nbgrader.utils import determine_grade

from grader import checkcache
from grader.course import nbautograde, nbkernel, nbscores, nbsite
from grader.course.nbautograde import (
    CELL_OUTPUT_CHARS,
    FLOOD_NOTE,
    SandboxedAutograde,
    SandboxKernelManager,
    verdict_outputs,
)
from grader.labfolder import lab_files
from grader.sandbox import MODE_ENV, SandboxError, isolation_mode
from grader.units import CODE_ROOT, load_unit

try:
    MODE = isolation_mode()
except SandboxError:
    MODE = "none"

PROBE = """
import json, os, resource, socket, sys
seen = {{p: os.path.exists(p) for p in {paths!r}}}
try:
    import grader
    staff = True
except ImportError:
    staff = False
try:
    open({host_file!r}, "w").write("x")
    wrote_host = True
except OSError:
    wrote_host = False
try:
    open(os.path.join({sockets!r}, "junk"), "w").write("x")
    wrote_sockets = True
except OSError:
    wrote_sockets = False
open("runs-written-here.txt", "w").write("x")  # its own working copy: allowed
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    network = True
except OSError:
    network = False
print(json.dumps({{"seen": seen, "staff": staff, "wrote_host": wrote_host, "uid": os.getuid(),
                  "wrote_sockets": wrote_sockets, "network": network, "cwd": os.getcwd(),
                  "sockets": sorted(os.listdir({sockets!r})),
                  "memory": resource.getrlimit(resource.RLIMIT_AS)[0],
                  "file": resource.getrlimit(resource.RLIMIT_FSIZE)[0]}}))
"""


async def _sealed(sockets: Path) -> None:
    """Wait for the known point where the launcher has taken the socket folder back (ours again,
    0755: ``nbkernel._seal``, once the kernel's sockets exist); only ``bwrap+uid`` seals."""
    if MODE != "bwrap+uid":
        return
    deadline = time.monotonic() + nbkernel.SEAL_WAIT_S  # a bound for a broken launcher
    while time.monotonic() < deadline:
        info = sockets.stat()
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o755:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the launcher never sealed {sockets}")


async def _run_in_kernel(folder, code_for, timeout: float = 60) -> dict:
    manager = SandboxKernelManager()
    await manager.start_kernel(cwd=str(folder))
    client = manager.client()
    client.start_channels()
    lines = []
    try:
        await client.wait_for_ready(timeout=60)
        await _sealed(Path(manager.ip).parent)
        reply = await client.execute_interactive(
            code_for(nbkernel.SOCKETS),
            output_hook=lambda msg: lines.append(msg["content"].get("text", "")),
            timeout=timeout,
        )
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        await manager.shutdown_kernel()
    return json.loads("".join(lines))


@NEEDS_KERNEL
def test_the_kernel_sees_no_hidden_material_and_writes_nothing_of_the_host(tmp_path):
    folder = tmp_path / "notebook"
    folder.mkdir()
    (folder / "policies.py").write_text("# the student's file\n")
    hidden = [
        CODE_ROOT / "traces",
        CODE_ROOT / "solutions",
        CODE_ROOT / "labs",
        CODE_ROOT / "grader",
        checkcache.cache_dir(),
        tmp_path,
    ]
    host_file = str(folder / "policies.py")

    def code(sockets):
        return PROBE.format(paths=[str(p) for p in hidden], host_file=host_file, sockets=sockets)

    got = asyncio.run(_run_in_kernel(folder, code))
    assert got["seen"] == {str(p): False for p in hidden}
    assert not got["staff"] and not got["wrote_host"] and not got["network"]
    assert got["cwd"] == nbkernel.LAB
    assert got["memory"] == nbkernel.LIMITS.memory_mb << 20
    assert got["file"] == nbkernel.LIMITS.file_mb << 20
    assert len(got["sockets"]) == len(nbkernel.PORTS)  # its socket folder, as bound
    if MODE == "bwrap+uid":
        assert got["uid"] != os.getuid()
        assert not got["wrote_sockets"]
    assert (folder / "policies.py").read_text() == "# the student's file\n"
    assert sorted(p.name for p in folder.iterdir()) == ["policies.py"]


SHM_FILL = """
import json, os
written, error, mib = 0, None, b"x" * (1 << 20)
for n in range(4 * {cap_mb} // {file_mb} + 4):  # many files: each stays under RLIMIT_FSIZE
    try:
        with open(f"/dev/shm/fill-{{n}}", "wb") as out:
            for _ in range({file_mb} // 2):
                out.write(mib)
                out.flush()
                written += len(mib)
    except OSError as e:
        error = e.strerror
        break
print(json.dumps({{"written": written, "error": error, "files": len(os.listdir("/dev/shm"))}}))
"""


@NEEDS_KERNEL
def test_the_kernels_dev_shm_is_its_own_bounded_and_gone_at_shutdown(tmp_path):
    """Attack: a cell fills /dev/shm as far as it will go. It stops at the kernel's own
    ``SHM_MB`` tmpfs with an error, and nothing of it reaches the host's /dev/shm."""
    folder = tmp_path / "notebook"
    folder.mkdir()
    host_shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()

    def code(sockets):
        return SHM_FILL.format(cap_mb=nbkernel.SHM_MB, file_mb=nbkernel.LIMITS.file_mb)

    got = asyncio.run(_run_in_kernel(folder, code))
    assert got["error"] is not None, "the kernel wrote four times its /dev/shm without an error"
    assert (nbkernel.SHM_MB - 1) << 20 <= got["written"] <= nbkernel.SHM_MB << 20
    assert got["files"] >= 2
    left = set(os.listdir("/dev/shm")) - host_shm if os.path.isdir("/dev/shm") else set()
    assert not {name for name in left if name.startswith("fill-")}


def test_the_kernel_refuses_to_start_without_bubblewrap(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(MODE_ENV, "rlimits")
    connection = tmp_path / "kernel.json"
    connection.write_text(json.dumps({"transport": "tcp", "ip": "127.0.0.1"}))
    assert nbkernel.main(["-f", str(connection)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs bubblewrap" in err[0]


GREP = """
import json, os, sys
needles = [bytes.fromhex(h) for h in {needles!r}]  # hex: this source names no path itself
skipped = ("/usr", "/proc", "/sys", "/dev")
roots = ["/", "/proc/self", "/dev/shm"] + [
    p for p in sys.path if p.startswith("/usr/") and os.path.isdir(p)  # the Python's packages
]
found, files, size = [], 0, 0
def check(path, text):
    if any(n in text for n in needles):
        found.append(path)
for root in roots:
    for folder, dirs, names in os.walk(root):
        if root == "/":
            dirs[:] = [d for d in dirs if "/" + d not in skipped]
        elif root == "/proc/self":
            dirs[:] = []
        check(folder, folder.encode())
        for name in names:
            path = os.path.join(folder, name)
            check(path, path.encode())
            try:
                if os.path.islink(path):
                    check(path, os.readlink(path).encode())
                    continue
                with open(path, "rb") as handle:
                    text = handle.read(64 << 20)
            except OSError:
                continue
            files += 1
            size += len(text)
            check(path, text)
check("sys.path", os.pathsep.join(sys.path).encode())
check("environ", repr(os.environ).encode())
print(json.dumps({{"found": found, "files": files, "size": size}}))
"""


@NEEDS_KERNEL
def test_nothing_the_kernel_can_read_names_the_checkout(tmp_path):
    """Everything the kernel can read (every file and link outside the host's ``/usr``,
    ``/proc``, ``/sys`` and ``/dev``, and there its Python's package folders, ``/proc/self``
    and ``/dev/shm``; its ``sys.path`` and environment) is searched for the checkout's path.
    It used to be in the editable install's finder, every compiled file of the staff
    environment's packages, ``/proc/self/mountinfo`` and ``sys.path``."""
    folder = tmp_path / "notebook"
    for rel, path in lab_files(load_unit("unit08")).items():  # a whole lab folder, as graded
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(path.read_bytes())
    needles = [n.hex() for n in nbsite.checkout_names()]

    def code(sockets):
        return GREP.format(needles=needles)

    got = asyncio.run(_run_in_kernel(folder, code, timeout=600))
    assert got["files"] > 1000 and got["size"] > 10 << 20  # it did read the packages
    assert got["found"] == []
    print(f"searched {got['files']} files, {got['size'] >> 20} MiB: no checkout path")


def test_the_kernels_packages_are_a_copy_without_the_staff_package_or_compiled_files():
    copy = nbsite.site_copy()
    assert nbsite.site_copy() == copy  # made once per set of versions
    names = {p.name for p in copy.iterdir()}
    assert "ipykernel" in names and "grader" not in names and "servesim" not in names
    assert not [p for p in copy.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]
    assert not [p for p in copy.rglob("*") if p.name.startswith("__editable__")]
    assert nbsite.naming_checkout(copy) == []
    assert not CODE_ROOT.is_relative_to(copy) and not copy.is_relative_to(CODE_ROOT)


def test_a_copy_that_would_name_the_checkout_is_refused(tmp_path):
    """The check after the copy reads the result: a file there that names the checkout (as
    an editable finder does) stops it."""
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "finder.py").write_text(f"MAPPING = {{'grader': {str(CODE_ROOT / 'grader')!r}}}\n")
    with pytest.raises(SandboxError, match=r"would name the checkout's path \(finder.py\)"):
        nbsite.build(nbsite.closure("traitlets"), copy)


def test_copies_unused_for_a_day_go_and_the_one_in_use_stays(tmp_path):
    """The scratch folder is usually memory: each checkout or set of versions makes its own
    copy (68 MB), and one left by another checkout no longer stays until the machine restarts."""
    keep, old, recent = (tmp_path / f"{nbsite.PREFIX}{n}" for n in ("keep", "old", "recent"))
    other = tmp_path / "not-a-copy"
    for folder in (keep, old, recent, other):
        (folder / "pkg").mkdir(parents=True)
        os.chmod(folder, 0o755)
    day_ago = time.time() - nbsite.STALE_S - 60
    for folder in (keep, old, other):
        os.utime(folder, (day_ago, day_ago))
    nbsite.sweep_unused(tmp_path, keep)
    assert keep.is_dir() and recent.is_dir() and other.is_dir() and not old.exists()


FLOOD = [
    # 64 MiB printed in 64 KiB pieces, each its own message
    'import sys\nfor _ in range(1024):\n    sys.stdout.write("x" * 65535 + "\\n")\n'
    "    sys.stdout.flush()",
    # one message of 4 MiB
    'from IPython.display import display\ndisplay({"text/plain": "y" * (4 << 20)}, raw=True)',
    'print("AFTER THE FLOOD")',
]


def _execute(tmp_path, sources: list[str], **options):
    folder = tmp_path / "notebook"
    folder.mkdir()
    nb = new_notebook(cells=[new_code_cell(source) for source in sources])
    runner = SandboxedAutograde(timeout=300, **options)
    nb, _ = runner.execute(nb, {"metadata": {"path": str(folder)}})
    return nb


@NEEDS_KERNEL
def test_an_output_flood_is_capped_while_the_notebook_runs(tmp_path):
    """Attack: a cell prints 64 MiB, the next sends one 4 MiB message. The grader keeps at
    most ``CELL_OUTPUT_CHARS`` of each, says so in each flooding cell, and the notebook goes
    on to its next cell."""
    nb = _execute(tmp_path, FLOOD)
    kept = [len(json.dumps(cell.outputs, ensure_ascii=False)) for cell in nb.cells]
    assert kept[0] <= CELL_OUTPUT_CHARS + 1024, kept
    assert kept[1] <= 1024, kept
    assert nb.cells[0].outputs[-1]["text"] == FLOOD_NOTE
    assert [o.get("text") for o in nb.cells[1].outputs] == [FLOOD_NOTE]
    # the kernel may send one print as several stream messages: the cell's text is what counts
    after = nb.cells[2].outputs
    assert {o.get("output_type") for o in after} == {"stream"}, after
    assert "".join(o["text"] for o in after) == "AFTER THE FLOOD\n"
    print(f"kept {kept} characters of output per cell of a 68 MiB flood")


@NEEDS_KERNEL
def test_a_message_over_the_limit_is_never_taken(tmp_path, monkeypatch):
    """Attack: one message larger than ``MESSAGE_BYTES`` (lowered here to 2 MiB, so the test
    stays light): the grader's socket refuses it, and the notebook's run ends with
    nbgrader's IOPub timeout error instead of holding the message."""
    monkeypatch.setattr(nbautograde, "MESSAGE_BYTES", 2 << 20)
    big = 'from IPython.display import display\ndisplay({"text/plain": "y" * (8 << 20)}, raw=True)'
    with pytest.raises(CellTimeoutError, match="Timeout waiting for IOPub output"):
        _execute(tmp_path, [big], iopub_timeout=5)


# --- scores decided outside the kernel ---------------------------------------------------


def _grade(outputs) -> float:
    cell = new_code_cell("hand_in(x=x)")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "points": 4, "grade_id": "t"}
    cell.outputs = outputs
    return determine_grade(cell)[0]


FORGED = [  # what kernel code can print to look like a score or a pass
    new_output("execute_result", data={"text/plain": "4.0"}, execution_count=1),
    new_output("stream", name="stderr", text="Traceback: looks like an error"),
    new_output("error", ename="AssertionError", evalue="forged", traceback=["forged"]),
    new_output("display_data", data={nbscores.ANSWERS_MIME: {"x": 1}, "text/plain": "x"}),
]


@pytest.mark.parametrize(
    ("verdict", "points"),
    [
        (nbscores.Verdict(0.0, "不对"), 0.0),
        (nbscores.Verdict(1.0, "通过"), 4.0),
        (nbscores.Verdict(0.25, "report", partial=True), 1.0),
    ],
)
def test_only_the_verdict_decides_a_cells_points(verdict, points):
    """Whatever the kernel printed (a number, stderr, an error), nbgrader's own scoring of the
    rewritten cell gives exactly the verdict's points, and the kernel's words stay readable."""
    assert _grade(verdict_outputs(FORGED, verdict, 4.0)) == points
    assert _grade(verdict_outputs([], verdict, 4.0)) == points
    kept = verdict_outputs(FORGED, verdict, 4.0)[0]
    assert kept["output_type"] == "stream" and "forged" in kept["text"]


def test_the_last_hand_in_counts_and_junk_is_no_answer():
    first = new_output("display_data", data={nbscores.ANSWERS_MIME: {"x": 1}})
    last = new_output("display_data", data={nbscores.ANSWERS_MIME: {"x": 2}})
    assert nbscores.handed_in([first, last]) == {"x": 2}
    assert (
        nbscores.handed_in([new_output("display_data", data={nbscores.ANSWERS_MIME: [1]})]) is None
    )
    huge = {"x": "y" * (nbscores.ANSWERS_MAX_BYTES + 1)}
    assert (
        nbscores.handed_in([new_output("display_data", data={nbscores.ANSWERS_MIME: huge})]) is None
    )
    assert nbscores.handed_in([]) is None


@pytest.mark.parametrize(
    "answer", [math.nan, math.inf, True, "12.25", None, {"v": 12.25}, 12.25 * (1 + 1e-5)]
)
def test_close_refuses_what_is_not_the_number(answer):
    with pytest.raises(nbscores.Wrong, match=r"不对|应该"):
        nbscores.close(answer, 12.25, "x")
    nbscores.close(12.25 * (1 + 1e-7), 12.25, "x")  # within the tolerance


def test_a_verdict_names_the_students_value_never_the_key():
    def key(case):
        return {"a": {"b": 31.75}}

    def policies():
        raise AssertionError("not a policy cell")

    checks = (nbscores.Close("ans", "case", lambda k: k["a"]),)
    verdict = nbscores.judge(checks, {"ans": {"b": 2.5}}, key, policies)
    assert verdict.fraction == 0.0 and "2.5" in verdict.message and "31.75" not in verdict.message
    assert nbscores.judge(checks, {"ans": {"b": 31.75}}, key, policies).fraction == 1.0
    assert nbscores.judge(checks, None, key, policies).fraction == 0.0
    assert nbscores.judge(checks, {"other": 1}, key, policies).fraction == 0.0
