"""Untrusted text into HTML: the one place the project escapes (standard library only).

    text(value) -> str          element content, or an attribute value in double or single quotes
    script_data(value) -> str   JSON for a ``<script type="application/json">`` block
    words(fragment) -> str      the reverse, for reading: an HTML fragment's text, tags dropped

Every page the project writes goes through these two: the run viewer (``servesim.runview``,
which joins every lab folder), the lesson site (``grader.sitebuild``, whose Jinja environment
hands each ``{{ value }}`` to ``text``), the load-sweep charts (``plots.py``). Request ids,
trace names and policy names come from files a student or a downloaded trace wrote, so a
page must stay whole whatever they hold. ``tests/site/test_hostile_pages.py`` opens each page
with hostile strings in Chromium; ``tests/test_htmlsafe.py`` checks that no other module
escapes by hand.

Contracts:

- ``text``: the result holds no ``&``, ``<``, ``>``, ``"`` or ``'`` but as a character
  reference, so it cannot open or close a tag, a comment, a CDATA section or a quoted
  attribute, in HTML or in XML (an SVG file). The references are the ones Jinja's autoescape
  writes, so a value reads the same whichever path drew it.
- ``script_data``: the result is JSON (``json.loads`` gives ``value`` back) in which ``<``,
  ``>``, ``&``, U+2028 and U+2029 appear only as ``\\uXXXX`` escapes, so ``</script>``,
  ``<!--``, ``<script`` and ``]]>`` cannot occur in it and the HTML parser sees the block as
  plain text to its real end. Outside strings JSON has none of these characters, so the
  replacement cannot change what the text means.
"""

from __future__ import annotations

import html
import json
import re

_TAG = re.compile(r"<[^>]+>")
_TEXT = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&#34;"), ("'", "&#39;"))
_SCRIPT = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def text(value) -> str:
    """``str(value)`` made safe as element content and as a quoted attribute value."""
    out = str(value)
    for char, reference in _TEXT:  # "&" first: the references themselves hold one
        out = out.replace(char, reference)
    return out


def script_data(value) -> str:
    """``value`` as compact JSON (non-ASCII kept) safe inside a ``<script>`` element."""
    out = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _SCRIPT:  # str.replace scans at C speed: a long run's data stays fast
        out = out.replace(char, escaped)
    return out


def words(fragment) -> str:
    """The text a reader sees in ``fragment``: tags dropped, character references resolved,
    white space collapsed (the lesson's claim checks read sentences this way)."""
    return " ".join(html.unescape(_TAG.sub("", str(fragment))).split())
