"""Whether the grading kernel can start on this host: one skip reason for every test that runs
it. Without bubblewrap it never starts (that refusal is tested on any host by
``test_sandboxed_kernel.py::test_the_kernel_refuses_to_start_without_bubblewrap``). Where the
checkout lies does not matter: the kernel gets a copy of its packages (``nbsite``), never the
staff virtualenv, so a checkout below ``/root`` runs it too."""

from __future__ import annotations

import pytest

from grader.sandbox import SandboxError, isolation_mode


def kernel_blocked() -> str | None:
    """Why the grading kernel cannot start here, or None."""
    try:
        mode = isolation_mode()
    except SandboxError:
        mode = "none"
    if not mode.startswith("bwrap"):
        return "the grading kernel needs bubblewrap"
    return None


NEEDS_KERNEL = pytest.mark.skipif(kernel_blocked() is not None, reason=kernel_blocked() or "")
