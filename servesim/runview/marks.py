"""What the run viewer draws of each step for the components that draw one
(``features.Component.view``): derived from the step's batch and the run's requests by the
component's own code, never read back from what the run file claims."""

from __future__ import annotations

from .. import components
from ..device import DeviceProfile


def mark_steps(steps: list, run: dict) -> None:
    """Set each step's ``marks`` from the components the run's device switches on that draw
    one (none: the steps keep ``marks=None``, and nothing is parsed)."""
    if not any(c.view for c in components.COMPONENTS):
        return
    device = DeviceProfile.from_json(run["device"], source="run device")
    views = [c.view for c in components.switched_on(device, run.get("limits")) if c.view]
    requests = {r["id"]: r for r in run["requests"]}
    for step, event in zip(steps, run["events"]):
        step.marks = {k: v for view in views for k, v in view(event, requests).items()}


def mark_rows(steps) -> list[list]:
    """``[step index, text]`` for each step with marks, the text ``name: value; ...`` (a list
    value joined by commas): what the page's step table shows. Empty, without looking at a
    step, while no component draws marks (a compact run's steps are made on demand)."""
    if not any(c.view for c in components.COMPONENTS):
        return []
    rows = []
    for n, step in enumerate(steps):
        if step.marks:
            rows.append([n, "; ".join(f"{k}: {_text(v)}" for k, v in step.marks.items())])
    return rows


def _text(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
