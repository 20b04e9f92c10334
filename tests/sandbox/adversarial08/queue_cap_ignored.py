"""Finding 3 (issue 20), the queue cap: the engine runs without the case's queue cap, so
requests that must be rejected at arrival are served; the run file states the case's cap.

The replay admits arrivals itself and knows the cap from the case: the run is invalid where
the cap mattered, instead of a different schedule that could earn partial credit.

APPENDS-TO: policies.py
CASES: budgeted-deadlines-b256-q5
EARNS: none
"""

import servesim.cli as _cli

_simulate = _cli.simulate


def _no_queue_cap(*args, **kwargs):
    kwargs["queue_cap"] = None
    return _simulate(*args, **kwargs)


_cli.simulate = _no_queue_cap
