"""``infralab site build``: render the static lesson site."""

from __future__ import annotations

import sys
from pathlib import Path


def _site_build(args, extra: list[str]) -> int:
    from ..units import labs_dir
    from .common import with_extra

    build = with_extra("grader.sitebuild.build", "site")
    BuildError, DEFAULT_OUT, build_site = build.BuildError, build.DEFAULT_OUT, build.build_site

    out = Path(args.out) if args.out else DEFAULT_OUT
    labs = Path(args.labs_dir) if args.labs_dir else labs_dir()
    try:
        report = build_site(out, labs)
    except BuildError as exc:
        print(f"infralab site build: error: {exc}", file=sys.stderr)
        return 1
    for note in report.handout_notes:
        print(f"note: {note}")
    print(f"built {len(report.pages)} pages, {len(report.claims)} claims checked -> {report.out}")
    return 0


def add_site(commands) -> None:
    site_cmd = commands.add_parser("site", help="the static lesson site")
    site_sub = site_cmd.add_subparsers(dest="action", required=True)
    site_build = site_sub.add_parser(
        "build",
        help="render the site (runs the reference simulations at build time)",
        description="Render site/templates and labs/<unit>/*.j2 into a static site. Every "
        "simulator number comes from runs made now; a claim of the text that stops holding "
        "fails the build.",
    )
    site_build.add_argument("--out", help="output folder (default: site/build)")
    site_build.add_argument(
        "--labs-dir", help="folder of <unit>/unit.yaml to build from (default: labs/)"
    )
    site_build.set_defaults(handler=_site_build)
