"""LaTeX to MathML at build time (latex2mathml), so formulas need no script or network."""

from __future__ import annotations

from latex2mathml.converter import convert
from markupsafe import Markup

from .claims import BuildError


def inline(latex: str) -> Markup:
    """Inline MathML for ``latex``."""
    try:
        return Markup(convert(latex))
    except Exception as exc:  # latex2mathml raises several exception types
        raise BuildError(f"cannot convert formula {latex!r}: {exc}") from None


def block(latex: str, number: str | None = None) -> Markup:
    """A display formula, optionally numbered like the textbook ("31.1")."""
    try:
        mathml = convert(latex, display="block")
    except Exception as exc:
        raise BuildError(f"cannot convert formula {latex!r}: {exc}") from None
    tag = f'<span class="eq-no">({number})</span>' if number else ""
    anchor = f' id="eq-{number}"' if number else ""
    return Markup(f'<div class="equation"{anchor}>{mathml}{tag}</div>')
