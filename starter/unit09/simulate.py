#!/usr/bin/env python3
"""Run the unit's scheduling policies on the virtual device. See README.md, or --help."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.cli import main

if __name__ == "__main__":
    sys.exit(main())
