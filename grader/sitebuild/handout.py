"""The lab handout (the lab folder's README.md) rendered to HTML with markdown-it-py.

Relative links to files of the lab folder are copied next to the page, so no link on the site
points nowhere; relative links to anything else are kept as plain text and reported. Formulas
written as ``$...$`` (inline) or ``$$...$$`` (display, on its own line) outside code become
MathML, as on the other pages; the README stays readable as plain text.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markupsafe import Markup

from . import math as texmath
from .claims import BuildError

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)[^`].*?\1", re.S)
_DISPLAY = re.compile(r"^\$\$(.+?)\$\$[ \t]*$", re.M)
_INLINE = re.compile(r"(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![$\w])")


@dataclass
class Handout:
    html: Markup | None
    title: str | None
    copied: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _is_relative(href: str) -> bool:
    parts = urlsplit(href)
    return not (parts.scheme or parts.netloc or href.startswith(("#", "/")))


def render_handout(lab_dir: Path, out_dir: Path, files_prefix: str) -> Handout:
    """Render ``lab_dir/README.md``; copy linked lab files under ``out_dir/files_prefix``."""
    readme = lab_dir / "README.md"
    if not readme.is_file():
        raise BuildError(f"the lab folder has no handout: {readme} is missing")
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    source, formulas = _protect_math(readme.read_text(encoding="utf-8"))
    tokens = md.parse(source)
    handout = Handout(None, None)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and handout.title is None:
            handout.title = tokens[i + 1].content
        children = token.children or []
        _join_cjk_lines(children)
        for k, child in enumerate(children):
            if child.type not in ("link_open", "image"):
                continue
            attr = "href" if child.type == "link_open" else "src"
            href = str(child.attrGet(attr) or "")
            if not _is_relative(href):
                continue
            path = href.split("#", 1)[0].split("?", 1)[0]
            source = (lab_dir / path).resolve()
            inside = source.is_relative_to(lab_dir.resolve())
            if path and inside and source.is_file():
                rel = PurePosixPath(files_prefix, *PurePosixPath(path).parts)
                target = out_dir / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                child.attrSet(attr, str(rel) + href[len(path) :])
                handout.copied.append(path)
            else:
                # A folder or a missing file: nothing to link to on the site; keep the text.
                _unlink(children, k)
                handout.dropped.append(href)
    html = md.renderer.render(tokens, md.options, {})
    for key, formula in formulas.items():
        html = html.replace(f"<p>{key}</p>", formula).replace(key, formula)
    handout.html = Markup(html)
    return handout


def _protect_math(text: str) -> tuple[str, dict[str, str]]:
    """Swap formulas outside code for placeholders; return the text and placeholder -> MathML."""
    formulas: dict[str, str] = {}

    def keep(mathml: str) -> str:
        key = f"INFRALABMATH{len(formulas)}X"
        formulas[key] = mathml
        return key

    def outside_code(part: str) -> str:
        pieces, last = [], 0
        for span in _CODE_SPAN.finditer(part):
            pieces += [_math(part[last : span.start()], keep), span.group(0)]
            last = span.end()
        return "".join(pieces) + _math(part[last:], keep)

    out, last = [], 0
    for fence in _FENCE.finditer(text):
        out += [outside_code(text[last : fence.start()]), fence.group(0)]
        last = fence.end()
    out.append(outside_code(text[last:]))
    return "".join(out), formulas


def _math(text: str, keep) -> str:
    text = _DISPLAY.sub(lambda m: keep(str(texmath.block(m.group(1).strip()))), text)
    return _INLINE.sub(lambda m: keep(str(texmath.inline(m.group(1)))), text)


def _is_cjk(char: str) -> bool:
    """Han characters, CJK punctuation and full-width forms: text that uses no spaces."""
    code = ord(char)
    return 0x3000 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0xFF00 <= code <= 0xFFEF


def _join_cjk_lines(children: list) -> None:
    """A line break inside a Chinese sentence is not a space: drop soft breaks between CJK."""
    for k, child in enumerate(children):
        if child.type != "softbreak" or not 0 < k < len(children) - 1:
            continue
        before, after = children[k - 1].content, children[k + 1].content
        if before and after and _is_cjk(before[-1]) and _is_cjk(after[0]):
            child.type, child.content = "text", ""


def _unlink(children: list, k: int) -> None:
    """Turn the link (or image) at ``children[k]`` into a plain span holding its text."""
    opening = children[k]
    if opening.type == "image":
        opening.type, opening.content = "text", opening.content or opening.attrGet("alt") or ""
        return
    depth = 0
    for closing in children[k:]:
        depth += closing.type == "link_open"
        depth -= closing.type == "link_close"
        if depth == 0:
            break
    opening.tag = closing.tag = "span"
    opening.attrs = {"class": "lab-path"}
