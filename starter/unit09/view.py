#!/usr/bin/env python3
"""Draw a run file as one HTML page (and a Chrome trace). See README.md, or --help."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.runview.cli import main

if __name__ == "__main__":
    sys.exit(main())
