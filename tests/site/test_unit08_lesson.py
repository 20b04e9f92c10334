"""Unit 08's lesson: its numbers come from the engine, and move when unit.yaml's device does."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import yaml

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
    for figure in ("timeline-batching", "kv-pages", "loops-ttft"):
        assert _svg(changed, figure) != _svg(default, figure), figure
    new, old = _values(changed), _values(default)
    assert new["mean-continuous"] != old["mean-continuous"]
    assert new["closed-p99"] != old["closed-p99"]
    expected = _mean_continuous(load_unit("unit08", labs))
    assert float(new["mean-continuous"].split()[0]) == round(expected, 2)


def test_lab_sweep_prints_the_pages_operating_points(built_site, tmp_path):
    """The lab's own sweep.py, with the reference solution in place, agrees with the page."""
    unit = load_unit("unit08")
    lab = tmp_path / "lab"
    shutil.copytree(unit.lab_dir, lab)
    for name in unit.doc["editable"]:
        shutil.copy(unit.solutions_dir / name, lab / name)
    html = (built_site[0] / "unit08" / "index.html").read_text(encoding="utf-8")
    command = unescape(re.search(r'<code id="sweep-command">(.*?)</code>', html).group(1))
    args = command.split()[2:]
    tiers = sorted(str(p.relative_to(lab)) for p in (lab / "tiers").glob("*.json"))
    at = args.index("tiers/*.json")
    args[at : at + 1] = tiers
    done = subprocess.run(
        [sys.executable, "sweep.py", *args, "--out", str(tmp_path / "plots")],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    printed = dict(re.findall(r"^(\S+)\s+up to (\S+) req/s", done.stdout, re.M))
    shown = dict(
        re.findall(
            r'<tr data-tier="([^"]+)"><th scope="row">[^<]+</th><td>[^<]*</td><td>([^<]+)</td>',
            html,
        )
    )
    assert printed and printed == {t: v for t, v in shown.items() if v != "不可行"}
    cheapest = re.search(r"cheapest feasible tier: (\S+)", done.stdout).group(1)
    assert f'data-value="cheapest">{cheapest}<' in html
