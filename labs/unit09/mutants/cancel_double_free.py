"""Mutant: cancel_aware adds the pages of every request that left since its last call back to
the free pages itself, although view.free_pages already counts them: freed twice."""

from servesim import SchedulerView

_reference_cancel_aware = cancel_aware  # noqa: F821 (the solution's, above this file)


class _Extra:
    def __init__(self, view, extra):
        self._view, self._extra = view, extra

    def __getattr__(self, name):
        return getattr(self._view, name)

    @property
    def free_pages(self):
        return self._view.free_pages + self._extra


def cancel_aware(view: SchedulerView, budget: int):
    held = view.memo.get("held", {})
    gone = sum(pages for rid, pages in held.items() if rid not in {s.id for s in view.holders})
    view.memo["held"] = {s.id: view.device.pages_for(s.context_tokens) for s in view.holders}
    return _reference_cancel_aware(_Extra(view, gone), budget)
