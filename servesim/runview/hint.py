"""What a failing public test prints: the command that draws its run against the expected one.

``show_command(run, snapshot, policy, lab_folder)`` writes the run the test made to
``runs/failed/<snapshot>-<policy>.json`` in the lab folder (``runs/`` never ships) and returns
``python3 view.py ... --against tests/expected/<snapshot>.json``.
"""

from __future__ import annotations

from pathlib import Path

from ..runfile import FORMAT_VERSION, dumps, write_atomic

TRACE_FIELDS = ("id", "arrivalMs", "inputTokens", "outputTokens")


def show_command(run: dict, snapshot: str, policy: str, lab_folder: Path) -> str:
    """Save ``run`` for the viewer, under the name of the ``policy`` it is compared with, and
    return the line to run from the lab folder (or why the run could not be saved: the test's
    own message matters more than the picture)."""
    rel = Path("runs") / "failed" / f"{snapshot}-{policy}.json"
    run = {**run, "policy": policy}
    requests = [{k: r[k] for k in TRACE_FIELDS} for r in run["requests"]]
    doc = {
        "formatVersion": FORMAT_VERSION,
        "trace": {"name": snapshot, "requests": requests},
        "runs": [run],
    }
    try:
        write_atomic(Path(lab_folder) / rel, dumps(doc))
    except OSError:
        return "(could not save the run to draw it: runs/ is not writable)"
    return f"see it: python3 view.py {rel} --against tests/expected/{snapshot}.json"
