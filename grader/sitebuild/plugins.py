"""What a unit contributes to the site: the ``site:`` section of its unit.yaml and plug-ins.

Everything unit-specific (which runs a lesson shows, extra pages such as textbook notes, the
next-unit teaser) lives in ``labs/<unit>/``; this module only reads it. The contract is written
out in docs/units.md, section "Site". In short::

    site:
      order: 7                                   # index position (then unit id); default 0
      lesson:                                    # <unit>/index.html
        template: lesson.html.j2                 # default lesson.html.j2, if that file exists
        context: site_context.py:lesson_context  # optional "file.py:function"
      pages:                                     # extra pages, each <unit>/<file>
        - {file: notes.html, template: notes.html.j2, title: "Notes", context: "notes.py:ctx"}
      next: {id: <unit id>, title: "..."}        # teaser while labs/<id>/ has no lesson

A context function is called as ``function(unit)`` with the :class:`grader.units.Unit` and
returns a dict of extra template variables. Plug-in files are loaded by path (never through
``sys.path``), under a module name unique to the file, so two units never share one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from ..plugins import load_file
from ..units import Unit
from .claims import BuildError

DEFAULT_LESSON = "lesson.html.j2"
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Page:
    """One page of a unit: a template in the unit folder rendered to ``<unit>/<file>``."""

    file: str
    template: str
    title: str
    context: str | None = None  # "module.py:function"


@dataclass(frozen=True)
class SiteSpec:
    """The ``site:`` section of one unit.yaml, checked and with defaults filled in."""

    unit_dir: Path
    order: int = 0
    lesson: Page | None = None
    pages: list[Page] = field(default_factory=list)
    next_id: str | None = None
    next_title: str | None = None


def _where(unit: Unit, key: str) -> str:
    return f"unit {unit.id}: unit.yaml site.{key}"


def _text(unit: Unit, key: str, value, *, name: bool = False) -> str:
    if not isinstance(value, str) or not value:
        raise BuildError(f"{_where(unit, key)} must be a non-empty string, not {value!r}")
    if name and not _NAME.match(value):
        raise BuildError(f"{_where(unit, key)}: {value!r} is not a plain file name")
    return value


def _context_ref(unit: Unit, key: str, value) -> str | None:
    if value is None:
        return None
    ref = _text(unit, key, value)
    file, sep, func = ref.partition(":")
    if not sep or not file.endswith(".py") or not _NAME.match(file) or not func.isidentifier():
        raise BuildError(f"{_where(unit, key)}: {ref!r} is not 'file.py:function'")
    return ref


def _page(unit: Unit, key: str, raw, unit_dir: Path, *, lesson: bool) -> Page:
    if not isinstance(raw, dict):
        raise BuildError(f"{_where(unit, key)} must be a mapping, not {raw!r}")
    allowed = {"template", "context"} | (set() if lesson else {"file", "title"})
    extra = sorted(set(raw) - allowed)
    if extra:
        raise BuildError(f"{_where(unit, key)}: unknown key {extra[0]!r}")
    template = _text(unit, f"{key}.template", raw.get("template", DEFAULT_LESSON), name=True)
    if not (unit_dir / template).is_file():
        raise BuildError(f"{_where(unit, key)}.template: no file {unit_dir / template}")
    if lesson:
        file, title = "index.html", "课程正文"
    else:
        file = _text(unit, f"{key}.file", raw.get("file"), name=True)
        title = _text(unit, f"{key}.title", raw.get("title"))
        if file in ("index.html", "handout.html") or not file.endswith(".html"):
            raise BuildError(f"{_where(unit, key)}.file: {file!r} is reserved or not .html")
    return Page(file, template, title, _context_ref(unit, f"{key}.context", raw.get("context")))


def site_spec(unit: Unit, unit_dir: Path) -> SiteSpec:
    """Read and check ``unit.doc["site"]``; a unit without one gets the defaults."""
    raw = unit.doc.get("site") or {}
    if not isinstance(raw, dict):
        raise BuildError(f"unit {unit.id}: unit.yaml site must be a mapping")
    extra = sorted(set(raw) - {"order", "lesson", "pages", "next"})
    if extra:
        raise BuildError(f"unit {unit.id}: unit.yaml site: unknown key {extra[0]!r}")
    order = raw.get("order", 0)
    if not isinstance(order, int) or isinstance(order, bool):
        raise BuildError(f"{_where(unit, 'order')} must be an integer, not {order!r}")
    lesson = None
    if "lesson" in raw:
        lesson = _page(unit, "lesson", raw["lesson"], unit_dir, lesson=True)
    elif (unit_dir / DEFAULT_LESSON).is_file():
        lesson = Page("index.html", DEFAULT_LESSON, "课程正文")
    pages_raw = raw.get("pages") or []
    if not isinstance(pages_raw, list):
        raise BuildError(f"{_where(unit, 'pages')} must be a list")
    pages = [_page(unit, f"pages[{i}]", p, unit_dir, lesson=False) for i, p in enumerate(pages_raw)]
    files = [p.file for p in pages]
    if len(set(files)) != len(files):
        raise BuildError(f"{_where(unit, 'pages')}: two pages write the same file")
    nxt = raw.get("next")
    next_id = next_title = None
    if nxt is not None:
        if not isinstance(nxt, dict) or set(nxt) != {"id", "title"}:
            raise BuildError(f"{_where(unit, 'next')} must be a mapping with 'id' and 'title'")
        next_id = _text(unit, "next.id", nxt["id"], name=True)
        next_title = _text(unit, "next.title", nxt["title"])
    return SiteSpec(unit_dir, order, lesson, pages, next_id, next_title)


def load_module(path: Path) -> ModuleType:
    """Import the Python file ``path`` by location, as a module named after that location."""
    path = Path(path).resolve()
    if not path.is_file():
        raise BuildError(f"site plug-in {path} does not exist")
    try:
        return load_file(path)
    except BuildError:
        raise
    except Exception as exc:
        raise BuildError(f"site plug-in {path.name}: {type(exc).__name__}: {exc}") from exc


def page_context(unit: Unit, spec: SiteSpec, page: Page) -> dict:
    """Call the page's context function (if any) and check that it returned a dict."""
    if page.context is None:
        return {}
    file, _, func = page.context.partition(":")
    module = load_module(spec.unit_dir / file)
    function = getattr(module, func, None)
    if not callable(function):
        raise BuildError(f"unit {unit.id}: site plug-in {file} has no function {func}()")
    try:
        context = function(unit)
    except BuildError:
        raise
    except Exception as exc:
        raise BuildError(f"unit {unit.id}: {page.context}(): {type(exc).__name__}: {exc}") from exc
    if not isinstance(context, dict):
        raise BuildError(f"unit {unit.id}: {page.context}() returned {type(context).__name__}")
    return context
