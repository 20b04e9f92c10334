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
