"""Changing a device constant in (a copy of) the unit config changes the numbers on the page."""

from __future__ import annotations

import shutil

import pytest
import yaml
from sitetest_helpers import METRICS, engine_table, lesson_html, page_table

from grader.cli import main
from grader.units import LABS_DIR, load_unit


def test_overhead_change_moves_the_page_numbers(tmp_path, built_site, capsys):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR, labs)
    config = labs / "unit07" / "unit.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["device"]["overheadMs"] = doc["device"]["overheadMs"] * 2 + 0.25
    config.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")

    out = tmp_path / "out"
    assert main(["site", "build", "--out", str(out), "--labs-dir", str(labs)]) == 0
    assert "claims checked" in capsys.readouterr().out

    changed = page_table(lesson_html(out))
    default = page_table(lesson_html(built_site[0]))
    expected = engine_table(load_unit("unit07", labs))
    for policy in ("fcfs", "chunked"):
        for metric in METRICS:
            assert changed[policy][metric] == pytest.approx(expected[policy][metric], abs=0.005)
    assert changed != default
    assert changed["fcfs"]["allDoneMs"] > default["fcfs"]["allDoneMs"]
    html = lesson_html(out)
    assert f"{doc['device']['overheadMs']:g} ms" in html


def test_bad_device_is_one_clear_error(tmp_path, capsys):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR, labs)
    config = labs / "unit07" / "unit.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["device"]["overheadMs"] = -1
    config.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["site", "build", "--out", str(out), "--labs-dir", str(labs)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "overheadMs" in err[0]
    assert not out.exists()
