"""Unit 08's lesson: its numbers come from the engine, and move when unit.yaml's device does."""

from __future__ import annotations

import re
import shutil
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
