"""The built site: every page parses, every internal link and asset resolves, nothing is left
unrendered, and the numbers on the page are the engine's."""

from __future__ import annotations

import re
import shutil
import zipfile
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import html5lib
import pytest
from sitetest_helpers import METRICS, engine_table, lesson_html, page_table

from grader.labfolder import lab_files
from grader.sitebuild import BuildError
from grader.sitebuild.build import SITE_DIR, build_site
from grader.units import LABS_DIR, REPO_ROOT


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id":
                self.ids.add(value)
            if name in ("href", "src") and value is not None:
                self.links.append(value)


def _parse(path: Path) -> _Links:
    links = _Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_expected_pages_exist(built_site):
    site, report = built_site
    assert {p.relative_to(site).as_posix() for p in _pages(site)} == {
        "index.html",
        "glossary.html",
        "unit07/index.html",
        "unit07/handout.html",
        "unit07/chapter31.html",
        "unit08/index.html",
        "unit08/handout.html",
        "unit09/index.html",
        "unit09/handout.html",
    }
    assert sorted(report.pages) == sorted(p.relative_to(site).as_posix() for p in _pages(site))


def test_pages_parse_strictly(built_site):
    site, _ = built_site
    for page in _pages(site):
        parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
        try:
            parser.parse(page.read_text(encoding="utf-8"))
        except html5lib.html5parser.ParseError as exc:
            pytest.fail(f"{page.relative_to(site)}: {exc}")


def test_no_unrendered_template_syntax(built_site):
    site, _ = built_site
    for page in [*_pages(site), *site.glob("static/*")]:
        text = page.read_text(encoding="utf-8")
        for marker in ("{{", "}}", "{%", "%}", "{#"):
            assert marker not in text, f"{page.relative_to(site)} contains {marker!r}"


def test_every_internal_link_and_asset_resolves(built_site):
    site, _ = built_site
    checked = 0
    for page in _pages(site):
        links = _parse(page)
        for link in links.links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https", "data"):
                continue
            assert not parts.scheme and not parts.netloc, f"{page}: unexpected link {link}"
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            assert target.is_file(), f"{page.relative_to(site)}: broken link {link}"
            assert target.resolve().is_relative_to(site.resolve()), f"{link} leaves the site"
            if parts.fragment:
                assert parts.fragment in _parse(target).ids, f"{page}: no anchor {link}"
            checked += 1
    assert checked > 20


def test_nothing_is_loaded_from_the_network(built_site):
    site, _ = built_site
    for page in _pages(site):
        text = page.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img|iframe|source)\b[^>]*>", text):
            assert "http" not in tag, f"{page.relative_to(site)} loads {tag}"
    css = (site / "static" / "site.css").read_text(encoding="utf-8")
    assert "@import" not in css and "url(" not in css and "@font-face" not in css


def test_mixed_table_is_the_engines(built_site, unit07):
    site, _ = built_site
    shown = page_table(lesson_html(site))
    expected = engine_table(unit07)
    assert set(shown) == set(expected) == {"fcfs", "chunked"}
    for policy, row in expected.items():
        for metric in METRICS:
            assert shown[policy][metric] == pytest.approx(row[metric], abs=0.005)


def test_claims_were_checked(built_site):
    _, report = built_site
    said = {message for _, message in report.claims}
    for claim in (
        "A's TTFT is equal under both policies",
        "S's TTFT is worse under chunking",
        "A's max ITL is better under chunking",
        "chunking is slower on prefill-only when the overhead is > 0",
        "with overhead 0 both policies take the same time on prefill-only",
    ):
        assert claim in said


def test_timeline_figure_comes_from_the_events(built_site, unit07):
    site, _ = built_site
    html = lesson_html(site)
    svg = re.search(r'<svg id="timeline-mixed".*?</svg>', html, re.S).group(0)
    assert "<title" in svg and "<desc" in svg and 'role="img"' in svg
    table = engine_table(unit07)
    assert table  # the engine ran
    bars = re.findall(r'<g class="ev ev-(decode|prefill|both)">', svg)
    from grader import reference

    trace = reference.load_trace(unit07, "mixed")
    device = reference.device_profile(unit07)
    events = len(reference.run_reference(unit07, trace, "fcfs", {}, device)["events"])
    events += len(reference.run_reference(unit07, trace, "chunked", {"chunk": 2}, device)["events"])
    assert len(bars) == events
    assert {"decode", "prefill"} <= set(bars)


def test_student_zip_is_copied_in(built_site, unit07):
    site, _ = built_site
    archive = site / "unit07" / "infra-lab-unit07.zip"
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
    expected = {"infra-lab-unit07/" + rel for rel in lab_files(unit07)}
    assert names == expected and "infra-lab-unit07/simulate.py" in names


def test_false_claim_stops_the_build_and_keeps_the_old_site(tmp_path):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR, labs)
    lesson = labs / "unit07" / "lesson.html.j2"
    text = lesson.read_text(encoding="utf-8")
    lesson.write_text(
        text.replace(
            '{{ require(fA.ttftMs == cA.ttftMs, "A\'s TTFT is equal under both policies") }}',
            '{{ require(fA.ttftMs != cA.ttftMs, "A\'s TTFT differs between the policies") }}',
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / ".infralab-site").write_text("old\n")
    with pytest.raises(BuildError, match="A's TTFT differs"):
        build_site(out, labs)
    assert sorted(p.name for p in out.iterdir()) == [".infralab-site"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_refuses_to_replace_a_folder_that_is_not_a_site_build(tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    with pytest.raises(BuildError, match="not a site build"):
        build_site(out)
    assert (out / "notes.txt").read_text() == "keep me\n"


def test_site_is_not_a_python_package():
    assert not (SITE_DIR / "__init__.py").exists()
    assert not list((REPO_ROOT / "site").rglob("*.py"))


def test_chapter_page_shows_the_computed_numbers(built_site):
    site, _ = built_site
    html = (site / "unit07" / "chapter31.html").read_text(encoding="utf-8")
    table = re.search(r'<table class="data[^"]*" id="mm1-table">.*?</table>', html, re.S).group(0)
    rows = [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    ]
    assert [row[-2:] for row in rows] == [["50", "230"], ["200", "921"]]
    for shown in ("<strong>33</strong>", "<strong>49</strong>", "<strong>97</strong>"):
        assert shown in html
    assert html.count("<math") > 20


def _solutions(html: str) -> dict[str, str | None]:
    """Exercise id -> text of its collapsible worked solution, tags stripped."""
    found = {}
    parts = re.split(r'<div class="exercise" id="(ex-[0-9-]+)">', html)
    for ex_id, body in zip(parts[1::2], parts[2::2], strict=True):
        solution = re.search(r'<details class="solution">(.*?)</details>', body, re.S)
        found[ex_id] = unescape(re.sub(r"<[^>]+>", "", solution.group(1))) if solution else None
    return found


def test_chapter_exercises_have_worked_solutions_with_computed_numbers(built_site):
    site, report = built_site
    html = (site / "unit07" / "chapter31.html").read_text(encoding="utf-8")
    solutions = _solutions(html)
    assert sorted(solutions) == sorted(f"ex-31-{n}" for n in range(1, 14))
    assert None not in solutions.values()
    assert '<details class="solution" open' not in html  # closed until the reader opens one
    assert "24" in solutions["ex-31-2"] and "20.67" in solutions["ex-31-2"]
    assert "共 34 页" in solutions["ex-31-5"]
    assert "面积 4" in solutions["ex-31-6"] and "平均驻留 2" in solutions["ex-31-6"]
    assert "= 8 s" in solutions["ex-31-10"]
    assert "98%" in solutions["ex-31-8"] and "99.5%" in solutions["ex-31-8"]
    for section in ("estimator", "little", "mm1", "admission", "fairness", "algorithm", "goodput"):
        assert f'<section id="{section}">' in html
    assert "模拟的轮数内没有完成" in html  # decode-first starves the waiting prompt
    chapter_claims = [m for page, m in report.claims if page.endswith("chapter31.html")]
    assert len(chapter_claims) >= 30


def test_chapter_exercises_31_3_and_31_4_name_the_lab_command(built_site):
    """Their solutions say which unit 08 lab command reproduces them; the build ran it."""
    site, report = built_site
    solutions = _solutions((site / "unit07" / "chapter31.html").read_text(encoding="utf-8"))
    for n in (3, 4):
        assert f"python3 exercises.py 31.{n}" in solutions[f"ex-31-{n}"]
    claims = {m for page, m in report.claims if page.endswith("chapter31.html")}
    assert "exercises.py 31.3 in the unit 08 lab prints the utilisation shown here" in claims
    assert "exercises.py 31.4 in the unit 08 lab prints the pair count shown here" in claims
    assert "the engine charges the same attention pairs for every chunking" in claims


def _quizzes(html: str) -> dict[str, list[tuple[bool, str]]]:
    found = {}
    for quiz_id, body in re.findall(
        r'<div class="quiz" data-quiz="([^"]+)">(.*?)</noscript>', html, re.S
    ):
        options = re.findall(r'data-correct="(true|false)"[^>]*>(.*?)</button>', body, re.S)
        found[quiz_id] = [(right == "true", unescape(text)) for right, text in options]
    return found


@pytest.mark.parametrize("unit_id", ["unit07", "unit08"])
def test_quiz_questions_have_one_right_answer_among_similar_options(built_site, unit_id):
    html = (built_site[0] / unit_id / "index.html").read_text(encoding="utf-8")
    quizzes = _quizzes(html)
    assert len(quizzes) >= 3
    positions = set()
    for quiz_id, options in quizzes.items():
        assert len(options) >= 3 and [r for r, _ in options].count(True) == 1, quiz_id
        lengths = [len(text) for _, text in options]
        assert max(lengths) <= 1.6 * min(lengths), (quiz_id, lengths)
        right = next(len(t) for r, t in options if r)
        assert right < max(lengths) or lengths.count(right) > 1, (
            f"{quiz_id}: the right one is longest"
        )
        positions.add(next(i for i, (r, _) in enumerate(options) if r))
    assert len(positions) > 1, "the right answer sits at the same place in every question"


def test_glossary_has_one_word_for_operating_point_and_the_knob_mapping(built_site):
    site, _ = built_site
    glossary = (site / "glossary.html").read_text(encoding="utf-8")
    for knob in ("max_num_batched_tokens", "max_num_seqs", "block_size"):
        assert knob in glossary
    # one Chinese word for "operating point" across the site and the lab folders
    texts = [p.read_text(encoding="utf-8") for p in _pages(site)]
    texts += [p.read_text(encoding="utf-8") for p in (REPO_ROOT / "starter").rglob("*.md")]
    assert all("运行点" not in t for t in texts)
    assert sum("工作点" in t for t in texts) >= 3


def test_bad_glossary_is_one_clear_error(tmp_path):
    from grader.sitebuild.claims import BuildError
    from grader.sitebuild.glossary import load_glossary

    (tmp_path / "glossary.yaml").write_text("terms:\n  - {id: x, term: t, en: e}\n")
    with pytest.raises(BuildError, match="terms #1: field 'text'"):
        load_glossary(tmp_path)
