"""Finding 5 (issue 20): a correct submission that sleeps in proportion to each trace's number
of requests, to read the hidden traces' sizes back from the per-case times of the report.

Student views show no time for hidden cases and no total time: the numbers cannot be read back.

APPENDS-TO: policies.py
CASES: all
EARNS: all
"""

import json as _json
import sys as _sys
import time as _time

if "--trace" in _sys.argv:
    with open(_sys.argv[_sys.argv.index("--trace") + 1], encoding="utf-8") as _handle:
        _time.sleep(0.004 * len(_json.load(_handle)["requests"]))
