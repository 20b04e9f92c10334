"""Render the static course site: ``infralab site build [--out DIR] [--labs-dir DIR]``.

Layout of the output (every link relative, so it works from file:// and any web server)::

    index.html                 every unit found in labs/, in site.order, from its metadata
    static/                    CSS and the small scripts (quiz, self-check, notes, explorer)
    <unit>/index.html          lesson page (site.lesson of unit.yaml; default lesson.html.j2)
    <unit>/handout.html        the lab folder's README.md
    <unit>/<page>.html         extra pages the unit declares (site.pages)
    <unit>/infra-lab-<unit>.zip  the student lab folder, unpacking to infra-lab-<unit>/
                               (grader.course.release.build_student_zip)

Nothing here knows a unit: what a unit shows comes from its unit.yaml and its plug-ins
(:mod:`grader.sitebuild.plugins`, docs/units.md "Site"). The output folder is replaced as a
whole, only once everything rendered.
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
from markdown_it import MarkdownIt
from markupsafe import Markup
from servesim.htmlsafe import text as escape

from .. import labfolder
from ..course import release
from ..course.points import points_table
from ..units import LABS_DIR, REPO_ROOT, Unit, UnitError, load_unit
from . import math as texmath
from .claimkinds import KINDS
from .claims import BuildError, ClaimLog
from .frequency import unchecked
from .glossary import load_glossary
from .handout import render_handout
from .lang import mark_english
from .plugins import Page, SiteSpec, page_context, site_spec
from .runs import event_ms

SITE_DIR = REPO_ROOT / "site"
DEFAULT_OUT = SITE_DIR / "build"
MARKER = ".infralab-site"


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


def _through_htmlsafe(value) -> Markup:
    """Jinja's ``finalize``: every ``{{ value }}`` that is not already markup (``Markup``, or
    an object with ``__html__`` such as a chart) is escaped by :func:`servesim.htmlsafe.text`,
    so autoescape, which leaves markup alone, never escapes anything itself and the site and
    the run viewer share one escaper."""
    if hasattr(value, "__html__"):
        return Markup(value.__html__())
    return Markup(escape(value))


def _environment(unit_dir: Path | None) -> jinja2.Environment:
    paths = [str(SITE_DIR / "templates")]
    if unit_dir is not None:
        paths.insert(0, str(unit_dir))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(paths),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        finalize=_through_htmlsafe,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(squash=_squash, ms=_ms, num=_num, frac_tex=_frac_tex, event_ms=event_ms)
    env.globals.update(tex=texmath.inline, texblock=texmath.block)
    return env


@dataclass(frozen=True)
class SiteUnit:
    """A unit as the site shows it: its unit.yaml and its checked ``site:`` section."""

    unit: Unit
    spec: SiteSpec

    @property
    def id(self) -> str:
        return self.unit.id

    @property
    def pages(self) -> list[Page]:
        """Lesson (if any) and extra pages, in nav order; the handout is always there."""
        return ([self.spec.lesson] if self.spec.lesson else []) + self.spec.pages


def _units(labs_dir: Path) -> list[SiteUnit]:
    units = []
    for path in sorted(Path(labs_dir).glob("*/unit.yaml")):
        unit = load_unit(path.parent.name, labs_dir)
        units.append(SiteUnit(unit, site_spec(unit, path.parent)))
    if not units:
        raise BuildError(f"no units under {labs_dir} (expected <unit>/unit.yaml)")
    return sorted(units, key=lambda u: (u.spec.order, u.id))


def _teasers(units: list[SiteUnit]) -> dict[str, dict]:
    """Next-unit teasers by the id of the unit that names them; ``built`` if it has a lesson."""
    lessons = {u.id for u in units if u.spec.lesson}
    return {
        u.id: {"id": u.spec.next_id, "title": u.spec.next_title, "built": u.spec.next_id in lessons}
        for u in units
        if u.spec.next_id
    }


class _Renderer:
    def __init__(self, out: Path, report: BuildReport, units: list[Unit]):
        self.out, self.report, self.units = out, report, units

    def page(self, env, template: str, rel: str, lesson: bool = False, **context) -> None:
        """Render ``template`` to ``rel``; a ``lesson`` page may use a frequency or comparison
        word only inside a checked claim (:mod:`.frequency`)."""
        depth = rel.count("/")
        claims = ClaimLog(page=rel, kinds=KINDS)
        env.globals["require"] = claims.require
        env.filters["claim"] = claims.claim
        env.filters["kind"] = claims.kind
        try:
            html = env.get_template(template).render(
                root="../" * depth or "./", page_path=rel, units=self.units, **context
            )
        except jinja2.TemplateError as exc:
            where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
            raise BuildError(f"{template}{where}: {exc}") from None
        loose = unchecked(html) if lesson else []
        if loose:
            raise BuildError(
                f"{rel}: {len(loose)} unchecked frequency or comparison statement(s); check each "
                "with the claim filter or say only what the runs show:\n  " + "\n  ".join(loose)
            )
        target = self.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(mark_english(html), encoding="utf-8")
        self.report.pages.append(rel)
        self.report.claims.extend(claims.checked)


def _neighbours(units: list[SiteUnit]) -> dict[str, dict]:
    """Each unit's previous and next unit in course order, as the unit nav links them."""

    def link(u: SiteUnit) -> dict:
        first = u.pages[0].file if u.pages else "handout.html"  # a unit without a lesson
        return {"id": u.id, "title": u.unit.doc.get("title_zh", u.unit.title), "file": first}

    return {
        u.id: {
            "prev": link(units[n - 1]) if n > 0 else None,
            "next": link(units[n + 1]) if n + 1 < len(units) else None,
        }
        for n, u in enumerate(units)
    }


def _points_html(unit: Unit) -> Markup | None:
    """The unit's points table per part (the handout's, generated from unit.yaml) as HTML."""
    if not unit.doc.get("parts"):
        return None
    html = MarkdownIt("commonmark").enable("table").render(points_table(unit).markdown())
    return Markup(html.replace("<table>", '<table class="data points-table" id="points-table">'))


def _build_unit(
    renderer: _Renderer, site_unit: SiteUnit, next_unit: dict | None, course: dict
) -> None:
    unit, spec = site_unit.unit, site_unit.spec
    env = _environment(spec.unit_dir)
    zip_name = release.student_zip_name(unit)
    archive = release.build_student_zip(unit, renderer.out / unit.id / zip_name)
    archive.chmod(0o644)  # written via mkstemp (0600); a web server must be able to read it
    common = {
        "unit": unit,
        "zip_name": zip_name,
        "next_unit": next_unit,
        "site_pages": site_unit.pages,
        "course": course,
        "points_html": _points_html(unit),
        "core_hours": points_table(unit).hours() if unit.doc.get("parts") else None,
    }
    lab = labfolder.built(unit)  # links may reach the engine, as in the lab students get
    handout = render_handout(lab, renderer.out / unit.id, "handout-files")
    renderer.report.handout_notes += [
        f"{unit.id}: kept as text (no such lab file): {h}" for h in handout.dropped
    ]
    for page in site_unit.pages:
        context = page_context(unit, spec, page)
        clash = sorted(set(context) & (set(common) | {"root", "page_path", "units", "handout"}))
        if clash:
            raise BuildError(f"unit {unit.id}: {page.context}() returns reserved key {clash[0]!r}")
        renderer.page(
            env, page.template, f"{unit.id}/{page.file}", lesson=True, **common, **context
        )
    renderer.page(env, "handout.html", f"{unit.id}/handout.html", handout=handout, **common)


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
        teasers, neighbours = _teasers(units), _neighbours(units)
        for site_unit in units:
            _build_unit(renderer, site_unit, teasers.get(site_unit.id), neighbours[site_unit.id])
        renderer.page(_environment(None), "index.html", "index.html", teasers=teasers)
        renderer.page(
            _environment(None), "glossary.html", "glossary.html", glossary=load_glossary(labs_dir)
        )
        (tmp / MARKER).write_text("built by infralab site build\n", encoding="utf-8")
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report
