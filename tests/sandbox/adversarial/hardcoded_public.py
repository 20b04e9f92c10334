"""Hard-codes the public answer for trace `mixed` (the lesson's schedules, replayed in call
order) and otherwise decodes whatever runs or prefills the newest arrival whole.

An honest reading: it earns a case only where the replayed script happens to be the right
schedule (trace `mixed` unchanged, fcfs, or chunked with chunk 2); every relabelled,
shifted or hidden trace gets the fallback, which is wrong. The test works out which cases
those are by running this file and the reference through the engine.

EARNS: replay
"""

from servesim import Batch, PrefillChunk, SchedulerView

D, P = "decode", "prefill"
FCFS = [(P, "A", 2), (P, "L", 12), (P, "S", 1), (D, "ALS"), (D, "AS"), (D, "AS")] + [(D, "A")] * 8
CHUNK2 = [(P, "A", 2)] + [(D, "A"), (P, "L", 2)] * 6 + [(D, "AL"), (P, "S", 1)]
CHUNK2 += [(D, "AS")] * 3 + [(D, "A")]
_calls = {"fcfs": 0, "chunked": 0}


def _scripted(view, name, script):
    ids = {s.id for s in (*view.waiting, *view.running)}
    step = _calls[name]
    _calls[name] += 1
    if not ids <= {"A", "L", "S"} or step >= len(script):
        return None
    kind, *rest = script[step]
    if kind == D:
        return Batch(decode=tuple(rest[0]))
    return Batch(prefill=(PrefillChunk(rest[0], rest[1]),))


def _fallback(view):
    if view.running:
        return Batch.decode_of(view.running)
    last = view.waiting[-1]
    return Batch.prefill_of(last, last.remaining_prefill)


def fcfs(view: SchedulerView) -> Batch:
    return _scripted(view, "fcfs", FCFS) or _fallback(view)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    return _scripted(view, "chunked", CHUNK2) or _fallback(view)
