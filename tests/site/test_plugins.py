"""Units plug into the site through their own folder: the builder and templates know no unit."""

from __future__ import annotations

import re
import shutil

import pytest
import yaml

from grader.cli import main
from grader.sitebuild import BuildError
from grader.sitebuild.build import SITE_DIR, build_site
from grader.units import LABS_DIR, REPO_ROOT, load_unit

MINIMAL_LESSON = """{% extends "base.html" %}
{% block title %}{{ unit.title }}{% endblock %}
{% block nav %}{% include "unit_nav.html" %}{% endblock %}
{% block content %}<p id="plain">{{ unit.id }} · {{ zip_name }}</p>{% endblock %}
"""


def _minimal_unit(labs, unit_id: str) -> None:
    """A second unit with only a unit.yaml (no site section) and a minimal lesson template."""
    doc = yaml.safe_load((LABS_DIR / "unit07" / "unit.yaml").read_text(encoding="utf-8"))
    doc = {k: v for k, v in doc.items() if k != "site"}
    doc.update(id=unit_id, title="Unit 99: a plain unit", title_zh="第 99 单元")
    (labs / unit_id).mkdir()
    (labs / unit_id / "unit.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    (labs / unit_id / "lesson.html.j2").write_text(MINIMAL_LESSON, encoding="utf-8")


def test_a_unit_without_plugins_builds_and_is_listed(tmp_path):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR / "unit07", labs / "unit07")  # other units may come and go
    _minimal_unit(labs, "unit99")
    out = tmp_path / "out"
    report = build_site(out, labs)
    assert {"unit99/index.html", "unit99/handout.html"} <= set(report.pages)
    assert not (out / "unit99" / "chapter31.html").exists()
    page = (out / "unit99" / "index.html").read_text(encoding="utf-8")
    assert '<p id="plain">unit99 · infra-lab-unit99.zip</p>' in page
    assert 'href="chapter31.html"' not in page and 'href="handout.html"' in page
    index = (out / "index.html").read_text(encoding="utf-8")
    order = [m for m in re.findall(r'<p class="unit-id">(\w+)</p>', index)]
    assert order == ["unit99", "unit07", "unit08"]  # site.order 0 before 7; unit08 is a teaser
    assert "第 99 单元" in index and 'href="unit99/index.html"' in index


@pytest.mark.parametrize(
    ("site", "message"),
    [
        ({"order": "first"}, "site.order must be an integer"),
        ({"pages": [{"file": "x.html", "template": "nope.j2", "title": "X"}]}, "no file"),
        ({"lesson": {"template": "lesson.html.j2", "context": "ctx"}}, "'file.py:function'"),
        ({"lesson": {"context": "missing.py:f"}}, "missing.py does not exist"),
        ({"colour": "red"}, "unknown key 'colour'"),
    ],
)
def test_a_bad_site_section_is_one_error_line(tmp_path, capsys, site, message):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR / "unit07", labs / "unit07")  # other units may come and go
    _minimal_unit(labs, "unit99")
    config = labs / "unit99" / "unit.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["site"] = site
    config.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["site", "build", "--out", str(out), "--labs-dir", str(labs)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "unit99" in err[0], err
    assert not out.exists()


def test_a_plugin_must_return_a_dict(tmp_path):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR / "unit07", labs / "unit07")  # other units may come and go
    _minimal_unit(labs, "unit99")
    (labs / "unit99" / "ctx.py").write_text("def lesson(unit):\n    return [unit.id]\n")
    config = labs / "unit99" / "unit.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["site"] = {"lesson": {"context": "ctx.py:lesson"}}
    config.write_text(yaml.safe_dump(doc))
    with pytest.raises(BuildError, match=r"ctx.py:lesson\(\) returned list"):
        build_site(tmp_path / "out", labs)


GENERIC = {"static", "index", "site", "base", "handout", "lesson", "build"}  # the builder's own


def _unit_words() -> set[str]:
    """Ids, trace names, policy names and page files of every unit in labs/."""
    words = set()
    for path in LABS_DIR.glob("*/unit.yaml"):
        unit = load_unit(path.parent.name)
        words |= {unit.id, *unit.public_traces, *(p["name"] for p in unit.policies)}
        words |= {c["trace"] for c in unit.doc["grading"]["cases"]}
        words |= {p["file"] for p in unit.doc.get("site", {}).get("pages", [])}
        nxt = unit.doc.get("site", {}).get("next")
        if nxt:
            words.add(nxt["id"])
    return {w for w in words if len(w) >= 4 and w not in GENERIC}


def test_builder_and_templates_name_no_unit():
    words = _unit_words()
    assert {"unit07", "fcfs", "mixed", "chapter31.html"} <= words
    sources = [*(REPO_ROOT / "grader" / "sitebuild").glob("*.py"), *SITE_DIR.rglob("*.*")]
    sources = [p for p in sources if "build" not in p.relative_to(SITE_DIR.parent).parts[1:2]]
    found = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        found += [
            (path.name, w) for w in words if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text)
        ]
    assert found == []
    chapter = re.compile(r"第 ?\d+ ?[章单课]|chapter ?\d+|lesson ?\d+", re.I)
    assert [p.name for p in sources if chapter.search(p.read_text(encoding="utf-8"))] == []


def test_a_unit_without_any_template_gets_its_handout_and_zip(tmp_path):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR / "unit07", labs / "unit07")
    _minimal_unit(labs, "unit99")
    (labs / "unit99" / "lesson.html.j2").unlink()
    out = tmp_path / "out"
    report = build_site(out, labs)
    assert [p for p in report.pages if p.startswith("unit99/")] == ["unit99/handout.html"]
    assert (out / "unit99" / "infra-lab-unit99.zip").is_file()
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="unit99/handout.html"' in index and 'href="unit99/index.html"' not in index
