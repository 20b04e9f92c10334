"""Issue 35: a policy that appends to a request's token times (``seq.token_times_ms.append``),
as a student might to note progress: the guard refuses the edit while the policy runs, and the
case ends in the one sentence naming ``paged()`` and what it changed (a hidden case shows the
catalogue entry's text), so it earns nothing.

APPENDS-TO: policies.py
CASES: paged-unseen paged-kv-b512-m96
EARNS: none
REASON: paged() changed its view (token_times_ms of request
"""

_honest_paged = paged  # noqa: F821 (appended to the reference's policies.py)


def paged(view, budget):
    if view.running:
        view.running[0].token_times_ms.append(view.now_ms)
    return _honest_paged(view, budget)
