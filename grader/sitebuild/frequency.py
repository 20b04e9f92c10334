"""Frequency and comparison words in lesson prose, each either checked or absent.

"Often", "always", "faster", 往往, 总是, 更快 … claim something about how runs turn out. A lesson
page may use one only inside a checked claim: the template wraps the sentence in
``{% filter claim(condition, "what it says") %}…{% endfilter %}``, which stops the build when
``condition`` (computed from the runs the page uses) is false and marks the text
``data-checked``. :func:`unchecked` lists every sentence outside such a mark that uses a word of
``PHRASES``; the build fails on any. Code, math and figures (``code``, ``pre``, ``svg``,
``script``, ``style``) are not prose and are not read; neither are a question (a sentence that
ends in a question mark claims nothing), a quiz option marked wrong (``data-correct="false"``:
the page presents it as false) or a list of names (``data-names``: part titles, file names).

只 ("only") and 最 ("most") are too common to list bare: 最后, 最初, 只要, 只能 and the metric
names 最大 ITL or 最长一步 claim nothing about how runs turn out. ``PHRASES`` lists their claim
senses instead (最便宜, 最高, 只有, 只剩 …), and ``NOT_CLAIMS`` the fixed phrases that contain one
of those words but name a rule or a setting (the scan's highest load, a minimum share), and
只有 … 才 ("only if", a condition).
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
        # 只 / 最 in their "only" / "most" senses (see the module docstring)
        "只有",
        "只剩",
        "只完成",
        "只占",
        "只到",
        "只覆盖",
        "只晚",
        "只多",
        "只少",
        "最便宜",
        "最贵",
        "最快",
        "最慢",
        "最好",
        "最差",
        "最糟",
        "最稳",
        "最容易",
        "最难",
        "最常",
        "最高",
        "最低",
        "最优",
    ),
    "en": ("often", "usually", "always", "never", "most", "faster", "slower", "only"),
}
# fixed phrases holding a listed word that claim nothing about runs: a setting or a rule's name
NOT_CLAIMS = ("最高负载", "最低份额", "最低执行份额", "最低服务份额")
_ONLY_IF = r"(?![^；。]*才)"  # 只有 … 才: "only if", a condition
_PATTERN = re.compile(
    "(?!"
    + "|".join(map(re.escape, NOT_CLAIMS))
    + ")(?:"
    + "|".join(
        [re.escape(p) + (_ONLY_IF if p == "只有" else "") for p in PHRASES["zh"]]
        + [rf"(?<![\w-]){re.escape(p)}(?![\w-])" for p in PHRASES["en"]]
    )
    + ")",
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
        hide = self._hidden() or tag in _SKIP or "data-checked" in names or "data-names" in names
        hide = hide or names.get("data-correct") == "false"
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
            if hit and not sentence.rstrip().endswith(("？", "?")):
                found.append(f"[{hit.group(0)}] {sentence.strip()}")
    return found
