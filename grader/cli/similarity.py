"""``infralab similarity --unit U SUBMISSIONS... [--out DIR]``: pairs of submissions whose
editable files share code beyond the starter (``grader.similarity``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..similarity import THRESHOLD
from ..units import load_unit
from .common import add_unit, show_path, with_extra


def _similarity(args, extra: list[str]) -> int:
    detect = with_extra("grader.similarity.detect", "similarity")
    from ..similarity import page

    unit = load_unit(args.unit)
    submissions = detect.load_class(unit, [Path(p) for p in args.submission])
    comparison = detect.compare(unit, submissions, args.threshold)
    out = Path(args.out or f"similarity-{unit.id}")
    written = page.write(comparison, out)
    flagged = comparison.flagged
    pairs = len(comparison.pairs)
    print(
        f"compared {len(comparison.names)} submissions ({pairs} pair{'s' * (pairs != 1)}): "
        f"{len(flagged)} flagged at {comparison.threshold:.0%}"
    )
    for pair in flagged:
        print(f"  {pair.a} and {pair.b}: {pair.similarity_a:.0%} and {pair.similarity_b:.0%}")
    for path in written:
        print(f"wrote {show_path(path)}")
    return 0


def _share(text: str) -> float:
    """A ``--threshold`` value: a share above 0 and at most 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{text!r} is not a share above 0 and at most 1")
    return value


def add_similarity(commands) -> None:
    parser = commands.add_parser(
        "similarity",
        help="find submissions whose editable files are alike beyond the starter code",
        description="Compare every pair of submissions (folders or .zip files) over the unit's "
        "editable files with copydetect's winnowing fingerprints; the starter's given code and "
        "stubs are excluded. Writes similarity.html and pairs.csv. Submissions are read, never "
        "run. Exit 0 whatever is found; non-zero when a submission cannot be read.",
    )
    add_unit(parser)
    parser.add_argument("submission", nargs="+", help="a folder or .zip per student (two or more)")
    parser.add_argument(
        "--out", metavar="DIR", help="where the report goes (default: similarity-<unit>)"
    )
    parser.add_argument(
        "--threshold",
        type=_share,
        default=THRESHOLD,
        metavar="SHARE",
        help="flag a pair when either submission shares at least this part of its own code "
        f"with the other (default: {THRESHOLD})",
    )
    parser.set_defaults(handler=_similarity)
