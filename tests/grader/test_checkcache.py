"""unit.yaml documents remembered by content (``grader.checkcache``): the same unit as a fresh
check, a changed file checked again, and a cache folder trusted only while it is private."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from grader import checkcache
from grader.units import CODE_ROOT, UnitError, labs_dir, load_unit


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(checkcache.CACHE_ENV, str(folder))
    return folder


def test_a_remembered_unit_is_the_checked_one(cache):
    fresh = load_unit("unit08")  # checked, then stored
    assert len(list((cache / "units").glob("*.json"))) == 1
    assert oct((cache / "units").stat().st_mode & 0o777) == "0o700"
    assert load_unit("unit08").doc == fresh.doc


def test_a_changed_file_is_checked_again(cache, tmp_path):
    labs = tmp_path / "labs"
    shutil.copytree(labs_dir() / "unit07", labs / "unit07")
    load_unit("unit07", labs)
    path = labs / "unit07" / "unit.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "bogus: 1\n", encoding="utf-8")
    with pytest.raises(UnitError, match="unknown field"):
        load_unit("unit07", labs)


def test_a_folder_others_may_write_is_no_cache(cache):
    load_unit("unit07")
    text = (labs_dir() / "unit07" / "unit.yaml").read_text(encoding="utf-8")
    assert checkcache.recall(text) is not None
    (cache / "units").chmod(0o777)
    assert checkcache.recall(text) is None
    (cache / "units").chmod(0o700)
    stored = next((cache / "units").glob("*.json"))
    stored.chmod(0o666)
    assert checkcache.recall(text) is None


def test_an_unusable_folder_is_no_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(checkcache.CACHE_ENV, str(blocker))
    assert load_unit("unit07").id == "unit07"


def test_a_warm_cache_spares_yaml_and_jsonschema(cache):
    code = (
        "import sys\nfrom grader.units import load_unit\nload_unit('unit08')\n"
        "print(sorted({'yaml', 'jsonschema'} & set(sys.modules)))"
    )
    env = {**os.environ, checkcache.CACHE_ENV: str(cache)}

    def modules():
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=CODE_ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert modules() == "['jsonschema', 'yaml']"  # the first reader checks
    assert modules() == "[]"
