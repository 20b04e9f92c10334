"""What the trusted parent decides about one case: the ``Verdict`` record and its texts.

``judge.judge`` decides it; ``child_exit`` (a child that left no run file) and ``scoring`` (a
checked run against the reference) make their verdicts here. A diagnosis only names a kind of
mistake, it never changes a verdict (``safely``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..diagnosis import Diagnosis
from .hidden import UNNAMED, Note, Remark, hidden_feedback, line, phrase
from .report import Status


@dataclass
class Verdict:
    """The outcome of one case.

    ``note`` is all a hidden case's feedback says besides the status and the function under
    test (``hidden.hidden_feedback``): a fixed phrase or a catalogue diagnosis, never the
    child's bytes. ``public`` (visible cases only) may replace the note's words with a more
    specific line, and ``detail`` adds what only a visible case may show (its traceback)."""

    status: Status
    note: Note | Diagnosis = Note.NONE
    public: str = ""  # visible cases only: a more specific line than the note's
    detail: str = ""  # visible cases only
    share: float = 0.0  # WRONG_SCHEDULE / WRONG_ANSWER / BELOW_REFERENCE: what matched
    matched: float = 0.0  # script cases: the share of the answer's units equal to the reference's
    metrics: dict = field(default_factory=dict)  # goodput cases: for the leaderboard
    subject: str = ""  # the function under test, as the unit names it (set by ``judge``)

    @property
    def summary(self) -> str:
        """The visible line after the status words (the note's, or ``public``, named)."""
        if self.status in UNNAMED:
            return self.public
        if not self.public:
            return phrase(self.note, self.subject)
        if self.status is Status.NOT_IMPLEMENTED or not self.subject:
            return self.public
        if self.public.startswith(self.subject):
            return self.public
        return f"{self.subject}: {self.public}"

    def visible_text(self) -> str:
        return line(self.status, self.summary) + (f"\n{self.detail}" if self.detail else "")

    def hidden_text(self, remarks: tuple[Remark, ...] = ()) -> str:
        return hidden_feedback(self.status, self.note, self.subject, remarks)


def safely(compute, fallback):
    """A diagnosis, or ``fallback`` when diagnosing odd data fails: the diagnosis names a kind
    of mistake, it never changes a verdict."""
    try:
        return compute()
    except Exception:  # any failure of the diagnosis falls back to a fixed text
        return fallback
