#!/usr/bin/env python3
"""Run the unit's scheduling policies on the virtual device. See README.md, or --help.

With ``--protocol FILE`` each run is one replication of that protocol; after the run this
script measures it with YOUR measure.py (``measure.replication``) over the protocol's window.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.cli import main


def report(setup, run) -> list[str]:
    """The replication's figures over the protocol's window, from measure.py."""
    import experiment
    import measure

    passes = None
    if setup.quality_pass_rate is not None:

        def passes(request):
            return measure.quality_passes(
                request["id"], setup.tier, setup.quality_pass_rate, setup.seed
            )

    try:
        got = experiment.replicate(measure, setup.protocol, run["requests"], passes)
    except NotImplementedError as exc:
        return [f"  measure.py: {exc} (needed for this replication's figures)"]
    g = got.goodput
    quality = "-" if got.quality_pass_rate is None else f"{got.quality_pass_rate:.1%}"
    over_succeeded = g.attainment_over_succeeded
    p99 = "inf" if got.p99_ttft_ms is None else f"{got.p99_ttft_ms:.0f} ms"
    steady = got.steady
    return [
        f"  submitted {g.submitted}, succeeded {g.succeeded}, qualifying {g.qualifying} over "
        f"{g.window_s:.1f} s: goodput {g.goodput_per_s:.3f} req/s; attainment "
        f"{g.attainment_over_submitted:.1%} of submitted, "
        f"{'-' if over_succeeded is None else f'{over_succeeded:.1%}'} of succeeded",
        f"  p99 TTFT {p99} (no first token = infinitely late); quality pass rate {quality}; "
        f"backlog {steady.first_half_in_system:.1f} -> {steady.second_half_in_system:.1f} "
        f"({'steady' if steady.steady else 'NOT steady: run longer'})",
    ]


if __name__ == "__main__":
    sys.exit(main(report=report))
