"""The two ways grading itself fails, and the one place a sandbox failure becomes the second.

``GradingError``: grading cannot run (a bad unit, missing golden files, a bad submission).
``EnvironmentFailure``: the grader's environment failed, not the submission: no score may be
recorded for it (a batch retries it on the next run).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator

from ..sandbox import SandboxError


class GradingError(Exception):
    """Grading itself could not run (bad unit, missing golden files, bad submission)."""


class EnvironmentFailure(GradingError):
    """The grader's environment failed (sandbox refused or broken, disk, permissions): not the
    submission's fault, so no score may be recorded for it."""


@contextlib.contextmanager
def environment_errors(where: str = "") -> Iterator[None]:
    """A sandbox that cannot run is an ``EnvironmentFailure``: the grader's, not the
    submission's, so a batch records no score and retries it on the next run."""
    try:
        yield
    except (OSError, subprocess.SubprocessError, SandboxError) as exc:
        raise EnvironmentFailure(f"{where}the sandbox could not run ({exc})") from exc
