"""Mutant: admit returns nothing (None) for a request without a deadline instead of True."""


def admit(request, view):
    if request.deadline_ms is not None:
        queued = sum(s.remaining_prefill for s in view.waiting) + request.input_tokens
        return queued * view.device.prefill_ms_per_token <= request.deadline_ms
