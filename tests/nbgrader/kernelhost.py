"""Whether the grading kernel can start on this host: one skip reason for every test that runs
it. Without bubblewrap it never starts; as root it runs as a dedicated uid, which must reach the
staff environment's package folders, so whether it starts depends on where the checkout and its
virtualenv lie (below ``/root`` it refuses, in one line: that refusal is tested on any host by
``test_sandboxed_kernel.py::test_a_site_folder_other_uids_cannot_reach_is_refused``)."""

from __future__ import annotations

import pytest

from grader.course import nbkernel
from grader.sandbox import SandboxError, isolation_mode


def kernel_blocked() -> str | None:
    """Why the grading kernel cannot start here, or None."""
    try:
        mode = isolation_mode()
    except SandboxError:
        mode = "none"
    if not mode.startswith("bwrap"):
        return "the grading kernel needs bubblewrap"
    if mode == "bwrap+uid" and (folder := nbkernel.unreachable_site_folder()) is not None:
        return (
            f"verdict depends on where the checkout lies: the kernel's uid cannot reach "
            f"{folder}, so the kernel refuses to start here (that refusal is tested on any host)"
        )
    return None


NEEDS_KERNEL = pytest.mark.skipif(kernel_blocked() is not None, reason=kernel_blocked() or "")
