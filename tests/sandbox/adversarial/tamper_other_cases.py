"""Finding 1: a case tries to rewrite every other case's results and to leak its own trace.

Each case walks its output folder's parent (where the other cases' folders would be) and the
current folder, overwrites every stdout/stderr/status/run file it can open with its own trace's
name, and prints that name. Results come back to the parent before the next case is sent, so
there is nothing left to rewrite; the policies themselves are correct.

EARNS: all
"""

import json
import os
import sys

from servesim import Batch, SchedulerView

_trace = sys.argv[sys.argv.index("--trace") + 1]
with open(_trace, encoding="utf-8") as _handle:
    _name = json.load(_handle)["name"]
_mark = f"LEAK:{_name}\n"
_mine = os.path.dirname(os.path.abspath(_trace))
for _top in {os.path.dirname(_mine), _mine, os.getcwd()}:
    for _folder, _dirs, _files in os.walk(_top):
        for _file in _files:
            _path = os.path.join(_folder, _file)
            if _path == _trace or os.path.dirname(_path) == _mine:
                continue
            try:
                with open(_path, "w", encoding="utf-8") as _out:
                    _out.write(_mark * 100)
                print("rewrote", _path)
            except OSError:
                pass
print(_mark, end="")
print(_mark, end="", file=sys.stderr)


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
