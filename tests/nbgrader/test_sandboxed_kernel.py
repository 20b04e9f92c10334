"""The notebook kernel's sandbox (``grader.course.nbkernel``) and the scores decided outside it
(``grader.course.nbscores``, ``nbautograde``), without a whole nbgrader course.

The end-to-end attack through ``nbgrader autograde`` is ``test_notebook_attack.py``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")

from kernelhost import NEEDS_KERNEL
from nbformat.v4 import new_code_cell, new_output
from nbgrader.utils import determine_grade

from grader import checkcache
from grader.course import nbkernel, nbscores
from grader.course.nbautograde import SandboxKernelManager, verdict_outputs
from grader.sandbox import MODE_ENV, SandboxError, isolation_mode
from grader.units import CODE_ROOT

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


async def _run_in_kernel(folder, code_for) -> dict:
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
            timeout=60,
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


def test_a_site_folder_other_uids_cannot_reach_is_refused(tmp_path, monkeypatch, request):
    """A staff environment below a folder other users cannot enter (a checkout under /root):
    the kernel, which as root runs as a dedicated uid, refuses to start, in one line, on any
    host (the tests that need a running kernel skip there, saying so: ``kernelhost.py``)."""
    holder = Path(tempfile.mkdtemp(prefix="infralab-home-"))  # pytest's own tmp is private
    request.addfinalizer(lambda: shutil.rmtree(holder))
    holder.chmod(0o755)
    private = holder / "home"
    site = private / "venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(nbkernel, "site_folders", lambda: [str(site)])
    assert nbkernel.unreachable_site_folder() is None
    private.chmod(0o700)
    assert nbkernel.unreachable_site_folder() == str(site)
    if MODE != "bwrap+uid":
        return  # only a root grader with bubblewrap drops to a uid of its own
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    monkeypatch.chdir(notebook)
    connection = tmp_path / "connection.json"
    connection.write_text(json.dumps({"transport": "tcp", "ip": "127.0.0.1"}))
    with pytest.raises(SandboxError, match=f"{site} cannot be read by the kernel's uid"):
        nbkernel.run_kernel(connection, [])


def test_a_package_folder_holding_the_staff_package_is_refused(tmp_path, monkeypatch):
    site = tmp_path / "lib" / "site-packages"
    (site / "grader").mkdir(parents=True)
    monkeypatch.setattr(nbkernel, "CODE_ROOT", site)
    monkeypatch.setattr(nbkernel.sys, "path", [str(site)])
    with pytest.raises(SandboxError, match="install it editable"):
        nbkernel.site_folders()


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
