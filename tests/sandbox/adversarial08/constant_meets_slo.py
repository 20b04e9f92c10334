"""Finding 6 (issue 20): meets_slo() answers False whatever the request (most reference answers
on the hidden runs are False), for half credit on the hidden meets_slo cases.

Credit counts only what an answer matches above the majority baseline: a constant earns
nothing.

APPENDS-TO: measure.py
CASES: measure-meets-slo-deadlines measure-meets-slo-steady
EARNS: none
"""


def meets_slo(request, slo):
    return False
