"""Frequency and comparison words in lesson prose, each either checked or absent.

"Often", "always", "faster", 往往, 总是, 更快 … claim something about how runs turn out. A lesson
page may use one only inside a checked claim: the template wraps the sentence in
``{% filter claim(condition, "what it says") %}…{% endfilter %}``, which stops the build when
``condition`` (computed from the runs the page uses) is false and marks the text
``data-checked``. :func:`unchecked` lists every sentence outside such a mark that uses a word of
``PHRASES``; the build fails on any. Code, math and figures (``code``, ``pre``, ``svg``,
``script``, ``style``) are not prose and are not read.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

# per language: the words that make a sentence a frequency or comparison claim
PHRASES = {
    "zh": (
        "通常",
        "往往",
        "常常",
        "经常",
        "总是",
        "总会",
        "从不",
        "从来",
        "永远",
        "大多",
        "多数",
        "一般",
        "更快",
        "更慢",
        "每次都",
        "一律",
        "只会",
    ),
    "en": ("often", "usually", "always", "never", "most", "faster", "slower", "only"),
}
_PATTERN = re.compile(
    "|".join(
        [re.escape(p) for p in PHRASES["zh"]]
        + [rf"(?<![\w-]){re.escape(p)}(?![\w-])" for p in PHRASES["en"]]
    ),
    re.IGNORECASE,
)
_SKIP = {"code", "pre", "svg", "script", "style", "math", "kbd", "samp"}
_VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "source", "col", "area"}
_BREAK = {"p", "li", "td", "th", "caption", "figcaption", "h1", "h2", "h3", "h4", "dd", "dt"}
_SENTENCE = re.compile(r"[^。；！？!?]*[。；！？!?]?")


class _Prose(HTMLParser):
    """The page's prose outside checked claims and non-prose elements, block by block."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, hidden from the lint)
        self.blocks: list[str] = [""]

    def _hidden(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        names = dict(attrs)
        hide = self._hidden() or tag in _SKIP or "data-checked" in names
        self.stack.append((tag, hide))
        if tag in _BREAK:
            self.blocks.append("")

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        while self.stack:
            top, _ = self.stack.pop()
            if top == tag:
                break
        if tag in _BREAK:
            self.blocks.append("")

    def handle_data(self, data):
        if not self._hidden():
            self.blocks[-1] += data


def unchecked(html: str) -> list[str]:
    """Every sentence of ``html``'s prose that uses a word of ``PHRASES`` outside a checked
    claim, with the word in brackets."""
    parser = _Prose()
    parser.feed(html)
    found = []
    for block in parser.blocks:
        for sentence in _SENTENCE.findall(" ".join(block.split())):
            hit = _PATTERN.search(sentence)
            if hit:
                found.append(f"[{hit.group(0)}] {sentence.strip()}")
    return found
