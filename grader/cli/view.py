"""``infralab view RUN.json [--against OTHER.json]``: the lab's view.py (``servesim.runview``),
the same page and Chrome trace, from the staff command line."""

from __future__ import annotations


def _view(args, extra: list[str]) -> int:
    from servesim.runview.cli import main

    return main(extra, prog="infralab view")


def add_view(commands) -> None:
    parser = commands.add_parser(
        "view",
        help="draw a run file as one HTML page (and a Chrome trace): the lab's view.py",
        add_help=False,
        description="Same flags as the lab's view.py (infralab view --help lists them).",
    )
    parser.set_defaults(handler=_view, passthrough=True)
