"""Issue 35: a policy that writes its sequences behind the view's guard, where no refusal can
stop it in-process: at every call, ``list.append`` (the plain list method, past
``TokenTimes``' refusals) adds a time to the first running request's token list. The engine
ends that request once it has its tokens, so the run ends; the parent's checks of the run file
against its trace and of the event log against the device rules name what is wrong (more token
times than the trace allows, tokens the steps never gave), so the attack earns nothing.

APPENDS-TO: policies.py
CASES: paged-unseen paged-kv-b512-m96
EARNS: none
REASON: invalid schedule
"""

_honest_paged = paged  # noqa: F821 (appended to the reference's policies.py)


def paged(view, budget):
    if view.running:
        list.append(view.running[0].token_times_ms, view.now_ms)
    return _honest_paged(view, budget)
