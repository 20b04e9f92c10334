"""Unfinished code, said in one line: which function of which file still needs writing.

The stubs of ``policies.py`` and ``measure.py`` raise ``NotImplementedError``. Every lab script
runs its ``main`` through ``run_main``, so a stub ends it with one line that names the function
(the innermost frame that raised), the file and the handout's part, never a traceback::

    sweep.py: error: goodput() in measure.py is not implemented yet (part 3 of the handout)

``simulate.py`` (``servesim.cli``) and the public tests name unfinished functions with the same
``unfinished`` text; ``stub_outcome`` tells the public tests whether to fail (a core part) or to
skip with a one-line reason (an optional or challenge part the student has not started).
"""

from __future__ import annotations

import sys
from pathlib import Path

EXIT_NOT_IMPLEMENTED = 1


def unfinished(exc: NotImplementedError, lab=None) -> str:
    """``"goodput() in measure.py is not implemented yet"``, from the frame that raised ``exc``,
    with the part that asks for it when ``lab`` (a ``LabConfig``) knows one."""
    code = _raiser(exc)
    if code is None or not str(exc).startswith(f"{code.co_name}()"):
        # raised in a worker process (its traceback stayed there) or in the student's own
        # words: the exception's text is the best name there is
        return str(exc) or "a function is not implemented yet"
    where = f"{code.co_name}() in {Path(code.co_filename).name}"
    part = lab.part_of(Path(code.co_filename).name, code.co_name) if lab is not None else None
    return f"{where} is not implemented yet" + (
        f" (part {part.number} of the handout)" if part else ""
    )


def stub_outcome(exc: NotImplementedError, lab) -> tuple[str, bool]:
    """``(message, skip)`` for a stub hit by a public test: skip when the function belongs to a
    part whose tests wait until it is started (lab.json ``parts``, kind optional or challenge)."""
    code, message = _raiser(exc), unfinished(exc, lab)
    if code is None or lab is None:
        return message, False
    part = lab.part_of(Path(code.co_filename).name, code.co_name)
    if part is None or not part.skips_until_started:
        return message, False
    kind = "optional" if part.kind == "optional" else "a challenge"
    return (
        f"part {part.number} ({part.title}) is {kind} and not started yet: "
        f"{unfinished(exc)}; its tests run once you start it",
        True,
    )


def _raiser(exc: BaseException):
    """The code object of the innermost frame of ``exc``'s traceback (None without one)."""
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return frame.tb_frame.f_code if frame is not None else None


def run_main(prog: str, main, argv=None, lab=None) -> int:
    """``main(argv)``, with a stub's ``NotImplementedError`` turned into one line on stderr."""
    try:
        return main(argv)
    except NotImplementedError as exc:
        if lab is None:
            from .labconfig import load_lab

            lab = _quiet(load_lab)
        print(f"{prog}: error: {unfinished(exc, lab)}", file=sys.stderr)
        return EXIT_NOT_IMPLEMENTED


def _quiet(load):
    try:
        return load()
    except (OSError, ValueError, KeyError):
        return None
