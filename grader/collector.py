"""The cyclic garbage collector off for a block: for the code that builds runs."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collector_off():
    """The cyclic garbage collector off for the block (as it was after).

    For the commands that simulate: a run is hundreds of thousands of small lists, dicts and
    numbers in no reference cycle (``tests/grader/test_cli_collector.py``: the garbage left in
    cycles does not grow with the run), so the collector's passes would only walk live objects,
    the whole run again at each older generation (about a tenth of the whole Azure job's
    process). Reference counting still frees everything as before.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
