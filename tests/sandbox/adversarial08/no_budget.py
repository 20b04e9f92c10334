"""Finding 3 (issue 20): the challenge takes 44 positions more than the token budget B in its
steps, and tells the engine there is no budget (the run file then states none).

The replay takes B from the case, not from the run file, and a run whose stated limits are not
the case's is rejected: the challenge earns nothing.

APPENDS-TO: policies.py
CASES: challenge
EARNS: all but challenge
"""

import servesim.cli as _cli

_simulate, _build_run = _cli.simulate, _cli.build_run


def _no_budget(*args, **kwargs):
    kwargs["budget"] = None
    return _simulate(*args, **kwargs)


def _states_none(*args, **kwargs):
    run = _build_run(*args, **kwargs)
    if "limits" in run:
        run["limits"]["budget"] = None
    return run


_cli.simulate, _cli.build_run = _no_budget, _states_none
_honest_challenge = challenge  # noqa: F821 - defined by the policies.py this is appended to


def challenge(view, budget):
    return _honest_challenge(view, budget + 44)
