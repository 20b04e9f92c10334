"""``python3 view.py RUN.json [--against OTHER.json]`` and ``infralab view``: draw a run.

Writes ``RUN.html`` (or ``--output``) and, with ``--format chrome-trace``, the Chrome trace
``RUN.trace.json`` beside it. ``--against`` takes another run file or a public test's expected
snapshot (``tests/expected/*.json``); the first step where the two differ is marked on the
page and printed. Bad input: one line naming what is wrong, exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from ..runfile import write_atomic
from .chrome import trace_pieces
from .diff import first_difference
from .model import ViewError, pick, read_json, replay, runs_of, snapshots_of
from .page import render_pieces


def build_parser(prog: str = "view.py") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Draw a run file (simulate.py --output) as one self-contained HTML page: "
        "each step's batch, queue length, KV pages, preemptions, rejections, cancellations, "
        "and each request's lane with its TTFT and ITL marks.",
    )
    parser.add_argument("run", metavar="RUN.json", help="a run file written by simulate.py")
    parser.add_argument(
        "--against",
        metavar="OTHER.json",
        help="another run file, or a public test's expected snapshot (tests/expected/*.json): "
        "mark and describe the first step where they differ",
    )
    parser.add_argument("--policy", help="which run of the file to draw (default: the first)")
    parser.add_argument("--output", metavar="OUT.html", help="the page (default: RUN.html)")
    parser.add_argument(
        "--format",
        choices=("html", "chrome-trace"),
        default="html",
        help="chrome-trace: also write a Chrome trace (Perfetto) file, OUT.trace.json",
    )
    return parser


def make(args: argparse.Namespace) -> list[Path]:
    """Write the page (and the trace); the paths written. Raises ``ViewError`` on bad input."""
    run_path = Path(args.run)
    doc = read_json(run_path)
    if isinstance(doc["runs"], dict):
        raise ViewError(
            f"{run_path}: an expected snapshot has no batches to draw; pass it to --against"
        )
    run = pick(runs_of(doc, run_path), args.policy, run_path)
    picture = replay(run)
    difference = None
    if args.against:
        other_path = Path(args.against)
        other_doc = read_json(other_path)
        policy = picture.policy
        if isinstance(other_doc["runs"], dict):
            items = snapshots_of(other_doc, other_path)
            other = pick(
                items, policy if any(s.policy == policy for s in items) else None, other_path
            )
        else:
            runs = runs_of(other_doc, other_path)
            same = any(r["policy"] == policy for r in runs)
            other = replay(pick(runs, policy if same else None, other_path))
        difference = first_difference(picture, other)
    trace_name = (
        (doc.get("trace") or {}).get("name", "?") if isinstance(doc.get("trace"), dict) else "?"
    )
    out = Path(args.output) if args.output else run_path.with_suffix(".html")
    written = []
    if args.format == "chrome-trace":
        trace_path = out.with_suffix(".trace.json")
        write_atomic(trace_path, trace_pieces(picture))
        written.append(trace_path)
    write_atomic(out, render_pieces(picture, trace_name, difference, args.against))
    written.insert(0, out)
    if args.against:
        if difference is None:
            print(f"no difference: every step of {args.run} matches {args.against}")
        else:
            print(f"first difference: {difference.en}")
    return written


def main(argv: list[str] | None = None, prog: str = "view.py") -> int:
    args = build_parser(prog).parse_args(argv)
    # A long run is millions of small lists and numbers, none in a reference cycle: the
    # collector's passes over them would only add time (about a sixth of a 20,000-request run).
    collecting = gc.isenabled()
    gc.disable()
    try:
        written = make(args)
    except ViewError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{prog}: error: cannot write ({exc})", file=sys.stderr)
        return 2
    finally:
        if collecting:
            gc.enable()
    for path in written:
        print(f"wrote {path}")
    return 0
