"""Claims the lesson text makes, checked while the text is rendered.

Templates call ``require(condition, "what the text says")`` right next to the sentence that
depends on it. A false claim stops the build with :class:`BuildError`, so the prose can never
drift away from what the simulator does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup
from servesim.htmlsafe import text as escape


class BuildError(Exception):
    """The site cannot be built (a claim failed, an input is missing or malformed)."""


@dataclass
class ClaimLog:
    """Every claim checked during one build, in order; ``require`` is the template global."""

    page: str = ""
    checked: list[tuple[str, str]] = field(default_factory=list)
    kinds: dict = field(default_factory=dict)  # claim kind name -> checker (claimkinds.KINDS)

    def require(self, condition, message: str) -> str:
        if not isinstance(condition, bool):
            raise BuildError(f"{self.page}: claim '{message}' is not a boolean ({condition!r})")
        if not condition:
            raise BuildError(f"{self.page}: the text claims '{message}', but the runs disagree")
        self.checked.append((self.page, message))
        return ""

    def claim(self, text, condition, message: str) -> Markup:
        """The ``claim`` filter: ``text`` (a sentence that says ``message``), kept when
        ``condition`` holds and marked ``data-checked`` so that :mod:`.frequency` reads it as
        checked; a false ``condition`` stops the build as :meth:`require` does."""
        self.require(condition, message)
        shown = text if isinstance(text, Markup) else escape(text)
        return Markup(f'<span data-checked="{escape(message)}">{shown}</span>')

    def kind(self, text, name: str, *args, **kwargs) -> Markup:
        """The ``kind`` filter: ``text`` read by the checker of claim kind ``name``
        (:mod:`.claimkinds`, given as ``kinds``), which finds what its words say and checks it
        against ``args``; kept and marked as :meth:`claim` does, or the build stops naming what
        the text says."""
        if name not in self.kinds:
            raise BuildError(
                f"{self.page}: no claim kind {name!r} (kinds: {', '.join(self.kinds)})"
            )
        holds, said = self.kinds[name](text, *args, **kwargs)
        if not holds:
            raise BuildError(f"{self.page}: the text claims ({name}) {said}, but the runs disagree")
        return self.claim(text, True, f"{name}: {said}")
