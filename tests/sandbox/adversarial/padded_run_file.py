"""Finding 4: a correct run file padded with whitespace to just under the old 16 MiB cap,
which used to cost the parent about 20 s of schema validation per case.

Run files are now capped relative to the trace (far above what a valid schedule needs), so
every padded file is rejected before it is parsed.

EARNS: none
"""

import json

from servesim import Batch, SchedulerView

_real_dumps = json.dumps


def _dumps(doc, *args, **kwargs):
    text = _real_dumps(doc, *args, **kwargs)
    if isinstance(doc, dict) and "runs" in doc:
        return text[:-2] + " " * ((16 << 20) - len(text) - 16) + text[-2:]
    return text


json.dumps = _dumps


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
