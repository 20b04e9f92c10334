"""LaTeX to MathML at build time (latex2mathml), so formulas need no script or network.

Every ``<math>`` carries ``alttext`` (the LaTeX source, whitespace collapsed): the text
alternative that assistive technology without MathML support reads, and what copy-and-paste
of a formula gives in some tools.
"""

from __future__ import annotations

from latex2mathml.converter import convert
from markupsafe import Markup
from servesim.htmlsafe import text

from .claims import BuildError


def _mathml(latex: str, display: str) -> str:
    try:
        mathml = convert(latex, display=display)
    except Exception as exc:  # latex2mathml raises several exception types
        raise BuildError(f"cannot convert formula {latex!r}: {exc}") from None
    alt = text(" ".join(latex.split()))
    # Braces as character references: the attribute means the same, and the built pages keep
    # no "{{" or "}}" (which the tests read as template syntax left unrendered).
    alt = alt.replace("{", "&#123;").replace("}", "&#125;")
    return mathml.replace("<math ", f'<math alttext="{alt}" ', 1)


def inline(latex: str) -> Markup:
    """Inline MathML for ``latex``."""
    return Markup(_mathml(latex, "inline"))


def block(latex: str, number: str | None = None) -> Markup:
    """A display formula, optionally numbered like the textbook ("31.1")."""
    mathml = _mathml(latex, "block")
    tag = f'<span class="eq-no">({number})</span>' if number else ""
    anchor = f' id="eq-{number}"' if number else ""
    return Markup(f'<div class="equation"{anchor}>{mathml}{tag}</div>')
