#!/usr/bin/env python3
"""Where one ``infralab`` command's time goes: start, import, setup, loop, summary, output.

Runs ``python -m grader.cli ARGS`` in this process with timers around its phases and prints one
JSON line on stderr, each phase as ``[wall seconds, CPU seconds]``:

- ``start``: the interpreter's own start-up before this file runs (CPU only; the parent, which
  sees the whole process, gives its wall time as the rest of the process's wall time);
- ``import``: the modules the command loads (``grader.cli``, ``servesim.cli`` and, for a
  fast-path run, ``grader.fastpath``, without numpy: a planner's run does not use it),
  imported up front so that no later phase pays for them;
- ``setup``: from ``main`` to the fast path's run (flags, unit, reading the trace);
- ``loop``: the executor (``grader.fastpath._steps``);
- ``summary``: the compact run entry and its summary figures (``grader.fastpath.compact_run``);
- ``run_other``: the rest of ``reference_run`` (coverage check, the workload's columns);
- ``output``: from the run's end to ``main``'s return (the table, encoding and writing the file).

The timers wrap module attributes and add microseconds; ``vs_vidur.py`` runs this file beside
the plain command, so the timed rounds never include them. A phase the command does not reach
(the lab engine runs instead) is ``[0, 0]``.

    python benchmarks/cli_phases.py simulate --unit unit08 --reference --policy budgeted ...
"""

import time

START_WALL, START_CPU = time.perf_counter(), time.process_time()

import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PHASES = ("start", "import", "setup", "loop", "summary", "run_other", "output")


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def timed(spent: dict, name: str, module, attribute: str, marks: dict | None = None) -> None:
    """Add ``module.attribute``'s inclusive time to ``spent[name]`` (and, with ``marks``, note
    when its first call began and its last call ended)."""
    inner = getattr(module, attribute, None)
    if inner is None:
        return

    def wrapper(*args, **kwargs):
        began = clocks()
        if marks is not None:
            marks.setdefault("begin", began)
        try:
            return inner(*args, **kwargs)
        finally:
            ended = clocks()
            spent[name] = [a + e - b for a, e, b in zip(spent[name], ended, began)]
            if marks is not None:
                marks["end"] = ended

    setattr(module, attribute, wrapper)


def main(argv: list[str]) -> int:
    spent = {name: [0.0, 0.0] for name in PHASES}
    spent["start"] = [0.0, START_CPU]
    began = clocks()
    cli = importlib.import_module("grader.cli.main")
    importlib.import_module("servesim.cli")
    try:
        fastpath = importlib.import_module("grader.fastpath")
    except ImportError:  # no numpy: the lab engine runs
        fastpath = None
    spent["import"] = [e - b for e, b in zip(clocks(), began)]
    marks: dict = {}
    if fastpath is not None:
        timed(spent, "loop", fastpath, "_steps")
        timed(spent, "summary", fastpath, "compact_run")
        timed(spent, "run_other", fastpath, "reference_run", marks)
    began = clocks()
    code = cli.main(argv)
    ended = clocks()
    run_began, run_ended = marks.get("begin", ended), marks.get("end", ended)
    spent["setup"] = [r - b for r, b in zip(run_began, began)]
    spent["output"] = [e - r for e, r in zip(ended, run_ended)]
    inner = spent["loop"], spent["summary"]
    spent["run_other"] = [t - a - b for t, a, b in zip(spent["run_other"], *inner)]
    total = [e - s for e, s in zip(ended, (START_WALL, 0.0))]
    print(json.dumps({"phases": spent, "in_process": total, "code": code}), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
