"""Mark English phrases in the Chinese pages with ``lang="en"`` (WCAG 3.1.2, language of parts).

A screen reader reads a page in the language of ``<html lang>``; an English phrase inside
Chinese text is read letter by letter or with Chinese sounds unless it is marked. The pages get
their prose from many places (templates, the lab folders' README.md, unit.yaml), so the build
marks phrases once, on the rendered HTML, by two rules:

- a run of three or more Latin-script words (``Run All Cells``, a paper title, a list of
  authors);
- an English gloss in full-width parentheses after a Chinese term: ``协调遗漏（coordinated
  omission）``.

One or two words outside parentheses (``decode batch``, ``TTFT``, ``prefill token``) are the
course's technical terms, which WCAG exempts, and stay as they are. Nothing inside tags or
attributes changes; the contents of ``head``, ``script``, ``style``, ``code``, ``pre``,
``math``, ``svg``, ``template``, ``textarea`` and of any element that already has a ``lang``
other than Chinese are left alone.
"""

from __future__ import annotations

import re

SKIP = frozenset(
    {"head", "script", "style", "code", "pre", "kbd", "samp", "math", "svg", "template", "textarea"}
)
_VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
    }
)
_TOKEN = re.compile(r"<!--.*?-->|<[^>]*>", re.S)
_NAME = re.compile(r"</?([A-Za-z][\w-]*)")
_LANG = re.compile(r"\slang=[\"']?([^\"'\s>]*)", re.I)
_WORD = r"(?<![&#\w])[A-Za-zÀ-ÖØ-öø-ÿ][\wÀ-ÖØ-öø-ÿ'’-]*(?<!['’_-])"
_PHRASE = re.compile(rf"{_WORD}(?:[,.:;]?\s+{_WORD}){{2,}}", re.A)
_GLOSS = re.compile(rf"(?<=（){_WORD}(?:\s+{_WORD})+(?=）)", re.A)


def _mark_text(text: str) -> str:
    spans = sorted(
        {m.span() for pattern in (_PHRASE, _GLOSS) for m in pattern.finditer(text)},
    )
    out, last = [], 0
    for start, end in spans:
        if start < last:  # a gloss inside a phrase already marked
            continue
        out += [text[last:start], f'<span lang="en">{text[start:end]}</span>']
        last = end
    return "".join(out) + text[last:]


def mark_english(html: str) -> str:
    """``html`` with every English phrase of its Chinese text wrapped in ``<span lang="en">``."""
    out: list[str] = []
    last = 0
    skip: str | None = None  # the element whose content is left alone, and its nesting depth
    depth = 0
    for match in _TOKEN.finditer(html):
        text = html[last : match.start()]
        out += [text if skip else _mark_text(text), match.group()]
        last = match.end()
        tag = match.group()
        name = _NAME.match(tag)
        if not name:
            continue
        element, closing, empty = name.group(1).lower(), tag.startswith("</"), tag.endswith("/>")
        if skip is None:
            opens = not (closing or empty or element in _VOID)
            foreign = _LANG.search(tag)
            if opens and (element in SKIP or (foreign and not foreign[1].startswith("zh"))):
                skip, depth = element, 1
        elif element == skip and not empty:
            depth += -1 if closing else 1
            if depth == 0:
                skip = None
    out.append(html[last:] if skip else _mark_text(html[last:]))
    return "".join(out)
