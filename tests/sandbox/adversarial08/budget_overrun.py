"""Finding 3 (issue 20), second form: the engine is told there is no budget, but the run file
states the case's B as it should, so only the replay of every step can notice that steps hold
more than B new positions.

APPENDS-TO: policies.py
CASES: challenge
EARNS: all but challenge
"""

import servesim.cli as _cli

_simulate = _cli.simulate


def _no_budget(*args, **kwargs):
    kwargs["budget"] = None
    return _simulate(*args, **kwargs)


_cli.simulate = _no_budget
_honest_challenge = challenge  # noqa: F821 - defined by the policies.py this is appended to


def challenge(view, budget):
    return _honest_challenge(view, budget + 44)
