"""Calls sys.exit(0) at import, before anything runs: a zero exit status with no run file.

EARNS: none
"""

import sys

sys.exit(0)
