"""Finding 5: allocates as many 1 MiB files as it can (up to 300 MiB) wherever it may write,
then deletes them and schedules correctly.

Under bubblewrap everything it may write is a size-capped tmpfs (/tmp, /out), so it stops at
the quota; other submissions never see a full disk. It prints how much it managed to write.

EARNS: all
"""

import os
import sys
import tempfile

from servesim import Batch, SchedulerView

_written, _paths = 0, []
_out = os.path.dirname(os.path.abspath(sys.argv[sys.argv.index("--output") + 1]))
for _top in (tempfile.gettempdir(), os.path.dirname(_out)):
    for _n in range(300 - _written):
        _path = os.path.join(_top, f"fill-{os.getpid()}-{_n}")
        try:
            _fd = os.open(_path, os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError:
            break
        try:
            os.posix_fallocate(_fd, 0, 1 << 20)  # real blocks, without the CPU of writing them
        except OSError:
            os.close(_fd)
            os.unlink(_path)
            break
        os.close(_fd)
        _paths.append(_path)
        _written += 1
for _path in _paths:
    os.unlink(_path)
print(f"wrote {_written} MiB")


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
