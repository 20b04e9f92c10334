"""Only plain files of a submission reach nbgrader (issue #46, item 0).

For every unit with a notebook, a student ("mallory") submits the released notebook and, in
place of files, links: each editable file is a symbolic link to the reference solution, and
the folder links to a hidden trace, a folder of hidden traces, the gradebook (symbolic links)
and the source notebook (a hard link), plus a device when the host lets us make one.
``nbgrader autograde`` typed directly (the course's config hooks ``grader.course.nbsubmitted``
into it) and ``generate_feedback`` then run. Mallory gets 0 on the policy cell, and no byte
of any linked file is in ``autograded/`` or ``feedback/``. Before the hook, the same folder
earned the whole policy cell and took those files home.

The routine itself (every kind of entry, FIFOs and sockets included) is tested without
nbgrader below.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader")

from kernelhost import kernel_blocked  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402
from test_notebook_attack import templates_path  # noqa: E402
from test_roundtrip import POLICY_CELL, submit  # noqa: E402

from grader.course import nbgrader_course, nbsubmitted  # noqa: E402

UNITS = [unit.id for unit in nbgrader_course.notebook_units()]
SQLITE_MAGIC = b"SQLite format 3\x00"


def _device(path: Path) -> bool:
    """A character device like /dev/null at ``path``, where the host allows making one."""
    try:
        os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        return False
    return True


def plant_links(course: Path, unit, folder: Path) -> dict[str, Path]:
    """Replace mallory's files by links to hidden material; name -> the file linked to."""
    hidden = sorted((unit.traces_dir / "hidden").glob("*.json"))
    assert hidden, f"{unit.id} has hidden traces"
    targets = {name: unit.solutions_dir / name for name in unit.editable}
    targets |= {
        "hidden-trace.json": hidden[0],
        "gradebook.txt": course / "gradebook.db",
    }
    for name, target in targets.items():
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(target)
    (folder / "hidden-traces").symlink_to(hidden[0].parent, target_is_directory=True)
    targets["hidden-traces/" + hidden[-1].name] = hidden[-1]
    source_nb = course / "source" / unit.id / f"{unit.id}.ipynb"
    os.link(source_nb, folder / "answers.txt")
    targets["answers.txt"] = source_nb
    _device(folder / "device")
    return targets


def everything_under(*folders: Path) -> list[bytes]:
    return [
        path.read_bytes()
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    ]


@pytest.fixture(scope="module", params=UNITS)
def linked(request, tmp_path_factory):
    """A course of the unit where mallory's submission is made of links, autograded."""
    if (why := kernel_blocked()) is not None:
        pytest.skip(why)
    from grader.units import load_unit

    unit = load_unit(request.param)
    root = tmp_path_factory.mktemp(f"course-links-{unit.id}")
    result = nbgrader_course.release_nbgrader(unit, root)
    release_nb = nbformat.read(result.release / f"{unit.id}.ipynb", as_version=4)
    folder = submit(root, unit, "mallory", release_nb, {})
    targets = plant_links(root, unit, folder)
    # the targets' bytes as they are now (the gradebook changes while grading)
    hidden = {name: path.read_bytes() for name, path in targets.items()}
    done = nbgrader_course.nbgrader(root, "autograde", unit.id, "--force")
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", templates_path())
        feedback = nbgrader_course.nbgrader(root, "generate_feedback", unit.id)
    assert feedback.returncode == 0, (feedback.stdout + feedback.stderr)[-4000:]
    return {"root": root, "unit": unit, "folder": folder, "hidden": hidden, "log": log}


def test_a_submission_of_links_scores_0_on_the_policy_cell(linked):
    unit = linked["unit"]
    with Gradebook(f"sqlite:///{linked['root'] / 'gradebook.db'}", "infralab") as gradebook:
        notebook = gradebook.find_submission_notebook(unit.id, unit.id, "mallory")
        got = {g.name: (g.auto_score, g.max_score) for g in notebook.grades}
    assert got[POLICY_CELL][1] > 0
    assert got[POLICY_CELL][0] == 0.0, got[POLICY_CELL]


def test_no_linked_byte_reaches_autograded_or_feedback(linked):
    root = linked["root"]
    graded = root / "autograded" / "mallory"
    back = root / "feedback" / "mallory"
    assert (graded / linked["unit"].id / f"{linked['unit'].id}.ipynb").is_file()
    assert any(back.rglob("*.html")), "the feedback was generated"
    files = everything_under(graded, back)
    leaked = []
    for name, content in linked["hidden"].items():
        assert content, name
        # the gradebook changes while grading: look for any SQLite file instead
        needle = SQLITE_MAGIC if name == "gradebook.txt" else content
        leaked += [name for text in files if needle in text]
    assert leaked == [], "these files' bytes are in autograded/ or feedback/"


def test_each_link_was_replaced_by_a_note_and_logged(linked):
    folder, log = linked["folder"], linked["log"]
    assert nbsubmitted.HOOK_LINE in log
    for name in [*linked["unit"].editable, "hidden-trace.json", "gradebook.txt", "answers.txt"]:
        path = folder / name
        assert path.is_file() and not path.is_symlink() and path.stat().st_nlink == 1
        assert path.read_text(encoding="utf-8").startswith(f"# infralab: {name} was a")
        assert f"{path} was a" in log
    assert (folder / "hidden-traces").is_file()
    graded = linked["root"] / "autograded" / "mallory" / linked["unit"].id
    for path in graded.rglob("*"):
        assert not path.is_symlink() and (path.is_dir() or path.is_file()), path


# The routine on its own, every kind of entry -------------------------------------------------


def test_make_plain_replaces_every_entry_that_is_not_a_plain_file(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET", encoding="utf-8")
    folder = tmp_path / "sub"
    (folder / "deep").mkdir(parents=True)
    (folder / "plain.py").write_text("x = 1\n", encoding="utf-8")
    (folder / "deep" / "kept.txt").write_text("kept", encoding="utf-8")
    (folder / "deep" / "link.py").symlink_to(outside)
    (folder / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    (folder / "dangling").symlink_to(tmp_path / "missing")
    os.link(outside, folder / "hard.txt")
    os.mkfifo(folder / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock"))
    server.close()
    expected = {
        "deep/link.py": "a symbolic link",
        "dirlink": "a symbolic link",
        "dangling": "a symbolic link",
        "hard.txt": "a hard link",
        "pipe": "a FIFO",
        "sock": "a socket",
    }
    if _device(folder / "dev"):
        expected["dev"] = "a device"
    replaced = nbsubmitted.make_plain(folder)
    got = {item.path.relative_to(folder).as_posix(): item.kind for item in replaced}
    assert got == expected
    for rel, kind in expected.items():
        path = folder / rel
        st = path.lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1, rel
        assert path.read_text(encoding="utf-8") == nbsubmitted.NOTE.format(
            name=path.name, kind=kind
        )
    assert (folder / "plain.py").read_text(encoding="utf-8") == "x = 1\n"
    assert (folder / "deep" / "kept.txt").read_text(encoding="utf-8") == "kept"
    assert outside.read_text(encoding="utf-8") == "SECRET"  # nothing written through a link
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".infralab-")) == []
    assert nbsubmitted.make_plain(folder) == []  # a second pass finds nothing


def test_make_plain_refuses_a_folder_that_is_a_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "sub").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(nbsubmitted.SubmissionError, match="is a symbolic link, not a folder"):
        nbsubmitted.make_plain(tmp_path / "sub")
    assert nbsubmitted.make_plain(tmp_path / "missing") == []


# The documented entry, ``infralab autograde`` -------------------------------------------------


def test_infralab_autograde_makes_submissions_plain_and_refuses_a_course_without_the_hook(
    tmp_path, capsys
):
    """Without the course's managed config, nbgrader would grade with its own defaults: the
    command still replaces the links first, then says the config did not load (exit 2)."""
    from grader.cli.main import main

    assert main(["autograde", "--unit", "unit07", "--course", str(tmp_path)]) == 2
    assert "no nbgrader_config.py there" in capsys.readouterr().err
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\n")
    folder = tmp_path / "submitted" / "mallory" / "unit07"
    folder.mkdir(parents=True)
    (folder / "policies.py").symlink_to(tmp_path / "nbgrader_config.py")
    assert main(["autograde", "--unit", "unit07", "--course", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert "replaced submitted/mallory/unit07/policies.py (a symbolic link) by a note" in out
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("infralab: error: nbgrader did not load infralab_nbgrader_config.py")
    )
    assert not (folder / "policies.py").is_symlink()
