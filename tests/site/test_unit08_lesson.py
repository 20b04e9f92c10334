"""Unit 08's lesson: its numbers come from the engine, and move when unit.yaml's device does."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import yaml
from labtools import copy_lab

from grader import reference
from grader.cli import main
from grader.units import LABS_DIR, load_unit


def _values(site: Path) -> dict[str, str]:
    html = (site / "unit08" / "index.html").read_text(encoding="utf-8")
    return dict(re.findall(r'data-value="([^"]+)">([^<]+)<', html))


def _svg(site: Path, element_id: str) -> str:
    html = (site / "unit08" / "index.html").read_text(encoding="utf-8")
    match = re.search(rf'<svg id="{element_id}".*?</svg>', html, re.S)
    assert match, element_id
    return match.group(0)


def _mean_continuous(unit) -> float:
    trace = reference.load_trace(unit, "static-vs-continuous")
    dev = reference.device_profile(unit, max_active=2)
    run = reference.run_reference(unit, trace, "continuous", {}, dev)
    return sum(r["finishMs"] for r in run["requests"]) / len(run["requests"])


def test_page_numbers_are_the_engines(built_site):
    site, report = built_site
    values = _values(site)
    assert float(values["mean-continuous"].split()[0]) == round(
        _mean_continuous(load_unit("unit08")), 2
    )
    claims = [c for page, c in report.claims if page == "unit08/index.html"]
    assert len(claims) >= 10


def test_device_change_moves_the_curves_and_numbers(tmp_path, built_site, capsys):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR, labs)
    config = labs / "unit08" / "unit.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["device"]["decodeBatchMs"] = doc["device"]["decodeBatchMs"] * 1.2
    config.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")

    out = tmp_path / "out"
    assert main(["site", "build", "--out", str(out), "--labs-dir", str(labs)]) == 0
    assert "claims checked" in capsys.readouterr().out

    default, changed = built_site[0], out
    for figure in ("timeline-batching",):
        assert _svg(changed, figure) != _svg(default, figure), figure
    # the protocol runs use the tiers' own devices, and the burst runs the lab's device file
    # devices/pool-256.json (as the page says, and as the graded case burst-pool-256 does), so
    # the unit's device leaves them alone
    for figure in ("sweep-goodput", "loops-ttft", "kv-pages"):
        assert _svg(changed, figure) == _svg(default, figure), figure
    new, old = _values(changed), _values(default)
    assert new["mean-continuous"] != old["mean-continuous"]
    assert (new["peak-budgeted"], new["peak-paged"]) == (old["peak-budgeted"], old["peak-paged"])
    expected = _mean_continuous(load_unit("unit08", labs))
    assert float(new["mean-continuous"].split()[0]) == round(expected, 2)


def _row(html: str, tier: str, load: str) -> list[str]:
    row = re.search(
        rf'<tr data-tier="{tier}" data-load="{load}"[^>]*>(.*?)</tr>', html, re.S
    ).group(1)
    return [unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]


def test_lab_sweep_prints_the_pages_cells(built_site, tmp_path):
    """The lab's own sweep.py, with the reference solution in place, gives the page's numbers
    for a cell of the page's protocol (the same seeds: the same runs)."""
    unit = load_unit("unit08")
    lab = copy_lab(tmp_path / "lab", True, unit)
    html = (built_site[0] / "unit08" / "index.html").read_text(encoding="utf-8")
    command = unescape(re.search(r'<code id="sweep-command">(.*?)</code>', html).group(1))
    args = command.split()[2:]
    tier, load = "small-paged", "2"
    done = subprocess.run(
        [sys.executable, "sweep.py", *args, "--tiers", f"tiers/{tier}.json", "--loads", load,
         "--out", str(tmp_path / "plots")],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcome, goodput, attainment = re.search(
        rf"^{tier}\s+{load}\s+(可行|不可行|尚不能确定)\s+(\S+)\s+(\S+)",  # the handout's words
        done.stdout,
        re.M,
    ).groups()
    shown = _row(html, tier, load)
    assert shown[2] == outcome
    assert shown[3] == goodput.replace("±", " ± ")
    assert shown[4] == attainment.replace("±", " ± ")


def test_lesson_cache_is_fresh():
    """The committed protocol runs match their inputs (CI builds from a fresh clone)."""
    from grader.plugins import load_file

    unit = load_unit("unit08")
    lesson_cache = load_file(unit.unit_dir / "lesson_cache.py")
    stale = lesson_cache.stale_sections(unit)
    assert not stale, f"run `python labs/unit08/lesson_runs.py`; stale: {stale}"
