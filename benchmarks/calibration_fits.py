#!/usr/bin/env python3
"""Held-out error of the affine and the context-aware device model over several calibrations.

Each run measures the grid of ``run_gpu.py --calibrate`` afresh (prefill, decode and mixed
steps; realdevice/calibrate.py) on the tiny model and predicts every step with fits that did not
see its shape (4 folds over the shapes). Timing noise on a shared machine differs from run to
run, so the figures to quote are the medians over the runs, printed last.

    python3 benchmarks/calibration_fits.py [--runs 5] [--grid cpu] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the engine packages' one source

import torch  # noqa: E402
from realdevice import calibrate, calibration  # noqa: E402
from realdevice.backend import RealDevice  # noqa: E402
from servesim.labconfig import load_lab  # noqa: E402

STATS = ("medianAbsPct", "meanAbsPct", "p90AbsPct")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="calibration_fits.py", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--grid", choices=sorted(calibrate.GRIDS), help="default: the device's")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--model", default="tiny")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    torch.set_num_threads(1)
    lab = load_lab(REPO / "starter" / "unit07")
    grid = calibrate.GRIDS[args.grid or args.device]
    pages = grid.pages_needed(lab.device.page_tokens)
    rows = []
    for run in range(1, args.runs + 1):
        started = time.monotonic()
        real = RealDevice(args.model, device=args.device, kv_pages=pages)
        held = calibration.run(real, grid, lab.device).held["errors"]
        rows.append(held)
        print(
            f"run {run}: {held['context']['count']} held-out steps in "
            f"{time.monotonic() - started:.0f} s; |error| median / mean / p90: affine "
            + " / ".join(f"{held['affine'][k]:.1f}%" for k in STATS)
            + ", context "
            + " / ".join(f"{held['context'][k]:.1f}%" for k in STATS)
        )
    timing = real.describe()["timing"]
    print(f"medians over {len(rows)} runs ({timing}, grid {args.grid or args.device}):")
    for model in ("affine", "context"):
        cells = [f"{k} {statistics.median(r[model][k] for r in rows):.1f}%" for k in STATS]
        print(f"  {model:8} " + ", ".join(cells))
    lower = sum(r["context"]["medianAbsPct"] < r["affine"]["medianAbsPct"] for r in rows)
    print(f"  context-aware median |error| below the affine one in {lower} of {len(rows)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
