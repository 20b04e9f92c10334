"""Finding 6 (issue 20), second form: meets_slo() gives the majority answer (False) except for
one request in twenty, answered at random, so the answer is not a plain constant.

It matches fewer answers than the constant does: still nothing above the majority baseline.

APPENDS-TO: measure.py
CASES: measure-meets-slo-deadlines measure-meets-slo-steady
EARNS: none
"""

import zlib as _zlib


def meets_slo(request, slo):
    return _zlib.crc32(request["id"].encode()) % 20 == 0
