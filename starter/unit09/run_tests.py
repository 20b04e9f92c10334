"""Run the public tests with the Python standard library alone: ``python3 run_tests.py``.

Options: ``-k TEXT`` runs only tests whose name contains TEXT, ``-x`` stops at the first
failure, ``-s`` shows what passing tests print. ``python3 -m pytest`` runs the same tests.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the lab's servesim, even under -I

from servesim.testrunner import main

if __name__ == "__main__":
    sys.exit(main())
