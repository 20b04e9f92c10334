"""The handout renderer: markdown to HTML, lab files linked from it copied next to the page."""

from __future__ import annotations

import pytest

from grader.sitebuild.claims import BuildError
from grader.sitebuild.handout import render_handout


def test_missing_readme_fails_the_build(tmp_path):
    with pytest.raises(BuildError, match="has no handout"):
        render_handout(tmp_path, tmp_path / "out", "files")


def test_links_to_lab_files_are_copied_and_others_unlinked(tmp_path):
    lab = tmp_path / "lab"
    (lab / "traces").mkdir(parents=True)
    (lab / "traces" / "mixed.json").write_text('{"requests": []}\n')
    (lab / "README.md").write_text(
        "# 实验 07\n\n"
        "| a | b |\n| - | - |\n| 1 | 2 |\n\n"
        "See [the trace](traces/mixed.json#top), [a folder](traces/), "
        "[missing](nope.md), [outside](../secret.txt) and [web](https://example.org/x).\n",
        encoding="utf-8",
    )
    (tmp_path / "secret.txt").write_text("no\n")
    out = tmp_path / "out"
    handout = render_handout(lab, out, "files")
    html = str(handout.html)
    assert handout.title == "实验 07"
    assert "<table>" in html
    assert 'href="files/traces/mixed.json#top"' in html
    assert (out / "files" / "traces" / "mixed.json").read_text() == '{"requests": []}\n'
    assert 'href="https://example.org/x"' in html
    assert sorted(handout.dropped) == ["../secret.txt", "nope.md", "traces/"]
    assert 'href="nope.md"' not in html and '<span class="lab-path">missing</span>' in html
    assert not (out / "secret.txt").exists() and not (out / "files" / "secret.txt").exists()


def test_line_breaks_inside_chinese_sentences_vanish(tmp_path):
    (tmp_path / "README.md").write_text(
        "# 说明\n\n第一行写到这里，\n第二行接着写。\nEnglish\nwords\n"
    )
    html = str(render_handout(tmp_path, tmp_path / "out", "files").html)
    assert "第一行写到这里，第二行接着写。" in html
    assert "English\nwords" in html


def test_formulas_become_mathml_outside_code(tmp_path):
    (tmp_path / "README.md").write_text(
        "# 说明\n\n- $\\mathrm{ITL}_j = u_j - u_{j-1}$（$j \\ge 2$）\n\n$$x^2$$\n\n"
        "价格 $5 和 $6，代码 `$u_{1}$`：\n\n```\necho $HOME $u_1$\n```\n",
        encoding="utf-8",
    )
    html = str(render_handout(tmp_path, tmp_path / "out", "files").html)
    assert html.count("<math") == 3 and 'class="equation"' in html
    assert "u_{j-1}" not in html and "INFRALABMATH" not in html
    assert "价格 $5 和 $6" in html and "<code>$u_{1}$</code>" in html
    assert "echo $HOME $u_1$" in html


def test_the_lab_handout_shows_no_raw_formula(built_site):
    site, _ = built_site
    html = (site / "unit07" / "handout.html").read_text(encoding="utf-8")
    assert html.count("<math") >= 8
    assert "u_{j" not in html and "$" not in html.split("<pre>")[0]
