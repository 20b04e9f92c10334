"""Render the static course site: ``infralab site build [--out DIR] [--labs-dir DIR]``.

Layout of the output (every link relative, so it works from file:// and any web server)::

    index.html                 units of the course
    static/                    CSS and the two small scripts (quiz, self-check list)
    <unit>/index.html          lesson page (labs/<unit>/lesson.html.j2)
    <unit>/handout.html        the lab folder's README.md
    <unit>/chapter31.html      notes on the textbook chapter (labs/<unit>/chapter31.html.j2)
    <unit>/infra-lab-<unit>.zip  the student lab folder (grader.release.build_student_zip)

The output folder is replaced as a whole, only once everything rendered.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from ..course import release
from ..units import LABS_DIR, REPO_ROOT, Unit, UnitError, load_unit
from . import math as texmath
from .chapter import chapter_numbers
from .claims import BuildError, ClaimLog
from .handout import render_handout
from .runs import event_ms, make_runs, opening_steps, widest_gap
from .svg import Lane, timeline_svg

SITE_DIR = REPO_ROOT / "site"
DEFAULT_OUT = SITE_DIR / "build"
MARKER = ".infralab-site"
NEXT_UNITS = {"unit07": ("unit08", "第 08 单元 · 把时序变成可接受的运行点")}


@dataclass
class BuildReport:
    out: Path
    pages: list[str] = field(default_factory=list)
    claims: list[tuple[str, str]] = field(default_factory=list)
    handout_notes: list[str] = field(default_factory=list)


def _ms(value) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}"


def _num(value, digits: int = 2) -> str:
    """A number without trailing zeros: 8.0 -> 8, 8.5 -> 8.5, 230.2585 -> 230.26."""
    if isinstance(value, Fraction):
        return str(value) if value.denominator != 1 else str(value.numerator)
    text = f"{value:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _squash(value) -> Markup:
    """Drop template line breaks and indentation inside a block of Chinese prose.

    Browsers render a line break between two CJK characters as a visible space; sentences split
    over template lines for readability must be joined back.
    """
    text = value if isinstance(value, Markup) else escape(value)
    return Markup(re.sub(r"\n[ \t]*", "", str(text)))


def _frac_tex(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return rf"\dfrac{{{value.numerator}}}{{{value.denominator}}}"


def _environment(unit_dir: Path | None) -> jinja2.Environment:
    paths = [str(SITE_DIR / "templates")]
    if unit_dir is not None:
        paths.insert(0, str(unit_dir))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(paths),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(squash=_squash, ms=_ms, num=_num, frac_tex=_frac_tex, event_ms=event_ms)
    env.globals.update(tex=texmath.inline, texblock=texmath.block)
    return env


def _units(labs_dir: Path) -> list[Unit]:
    units = []
    for path in sorted(Path(labs_dir).glob("*/unit.yaml")):
        units.append(load_unit(path.parent.name, labs_dir))
    if not units:
        raise BuildError(f"no units under {labs_dir} (expected <unit>/unit.yaml)")
    return units


class _Renderer:
    def __init__(self, out: Path, report: BuildReport, units: list[Unit]):
        self.out, self.report, self.units = out, report, units

    def page(self, env, template: str, rel: str, **context) -> None:
        depth = rel.count("/")
        claims = ClaimLog(page=rel)
        env.globals["require"] = claims.require
        try:
            html = env.get_template(template).render(
                root="../" * depth or "./", page_path=rel, units=self.units, **context
            )
        except jinja2.TemplateError as exc:
            where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
            raise BuildError(f"{template}{where}: {exc}") from None
        target = self.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
        self.report.pages.append(rel)
        self.report.claims.extend(claims.checked)


def _lesson_context(unit: Unit) -> dict:
    runs = make_runs(unit)
    fcfs, chunked = runs.mixed["fcfs"], runs.mixed["chunked"]
    desc = (
        f"上：fcfs；下：chunk={runs.chunk}。横轴为毫秒，两条时间线比例相同。"
        "绿色块是 decode batch，琥珀色块是 prefill（标注请求与 token 数），"
        "竖线标出每个请求的首 token。"
    )
    figure = timeline_svg(
        [Lane("fcfs", fcfs), Lane(f"chunk={runs.chunk}", chunked)],
        title=f"mixed 在 fcfs 与 chunk={runs.chunk} 下的提交时间线",
        desc=desc,
        element_id="timeline-mixed",
    )
    return {
        "runs": runs,
        "steps": opening_steps(fcfs),
        "gap_fcfs": widest_gap(fcfs, "A"),
        "gap_chunked": widest_gap(chunked, "A"),
        "timeline_svg": Markup(figure),
        "timeline_desc": desc,
    }


def _build_unit(renderer: _Renderer, unit: Unit, labs_dir: Path) -> dict:
    unit_dir = Path(labs_dir) / unit.id
    env = _environment(unit_dir)
    zip_name = f"infra-lab-{unit.id}.zip"
    archive = release.build_student_zip(unit, renderer.out / unit.id / zip_name)
    archive.chmod(0o644)  # written via mkstemp (0600); a web server must be able to read it
    nxt = NEXT_UNITS.get(unit.id)
    next_unit = None
    if nxt:
        built = (Path(labs_dir) / nxt[0] / "lesson.html.j2").is_file()
        next_unit = {"id": nxt[0], "title": nxt[1], "built": built}
    common = {"unit": unit, "zip_name": zip_name, "next_unit": next_unit}
    pages = {"lesson": (unit_dir / "lesson.html.j2").is_file()}
    pages["chapter"] = (unit_dir / "chapter31.html.j2").is_file()
    if pages["lesson"]:
        renderer.page(
            env, "lesson.html.j2", f"{unit.id}/index.html", **common, **_lesson_context(unit)
        )
    handout = render_handout(unit.lab_dir, renderer.out / unit.id, "handout-files")
    renderer.report.handout_notes += [
        f"{unit.id}: kept as text (no such lab file): {h}" for h in handout.dropped
    ]
    renderer.page(env, "handout.html", f"{unit.id}/handout.html", handout=handout, **common)
    if pages["chapter"]:
        renderer.page(
            env, "chapter31.html.j2", f"{unit.id}/chapter31.html", **common, ch=chapter_numbers()
        )
    return pages


def _replace_dir(tmp: Path, out: Path) -> None:
    if out.exists():
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise BuildError(f"{out} exists and is not a site build; refusing to replace it")
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old / out.name)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)


def build_site(out: Path = DEFAULT_OUT, labs_dir: Path = LABS_DIR) -> BuildReport:
    """Build the whole site into ``out``; raise :class:`BuildError` and leave ``out`` alone
    if anything fails."""
    out = Path(out).resolve()
    if (SITE_DIR / "__init__.py").exists():
        raise BuildError("site/__init__.py must not exist (it would shadow a stdlib module)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it 0700; the site is meant to be served
    report = BuildReport(out)
    try:
        try:
            units = _units(labs_dir)
        except UnitError as exc:
            raise BuildError(str(exc)) from None
        renderer = _Renderer(tmp, report, units)
        shutil.copytree(SITE_DIR / "static", tmp / "static")
        unit_pages = {unit.id: _build_unit(renderer, unit, labs_dir) for unit in units}
        renderer.page(
            _environment(None),
            "index.html",
            "index.html",
            unit_pages=unit_pages,
            next_units=NEXT_UNITS,
        )
        (tmp / MARKER).write_text("built by infralab site build\n", encoding="utf-8")
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report
