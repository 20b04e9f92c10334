#!/usr/bin/env python3
"""Run the unit's policies on a real transformer (PyTorch needed), or calibrate the device.

Optional part of the lab: simulate.py never needs this. See the last part of README.md, or --help.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    from realdevice.cli import main
except ImportError as exc:
    sys.exit(f"run_gpu.py: error: {exc}")

if __name__ == "__main__":
    sys.exit(main())
