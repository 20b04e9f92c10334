"""Compact run entries: step times plus each request's slices, and the one expansion to full.

A full run entry lists every token time and every submission's batch; on a large trace that is
hundreds of megabytes. A compact entry (``"format": "compact"``, see ``schemas/``) stores:

- ``stepStartMs`` / ``stepEndMs``: when each submission started and ended;
- ``decodeSteps``: the indices of the submissions that decode (in increasing order);
- ``chunks``: every prefill chunk as ``[step, request index, fromToken, tokens]``, in step
  order and, within a step, in the batch's order;
- per request, ``slices``: ``[step, decodeIndex, count]`` for each time it entered the running
  set: its token from the prefill that ended at submission ``step``, then ``count`` decode
  tokens at submissions ``decodeSteps[decodeIndex : decodeIndex + count]``.

A decode batch holds every running request, in the order they got into the running set (the
earlier entering submission first; within one submission, its chunk order). The engine keeps
that order, and every policy of the course decodes all running requests at once; a run whose
batches do not (``from_timeline`` returns None) is written in the full format instead.

``expand_run`` turns a compact entry back into exactly the full one; every reader of run files
calls it (through ``expand_document``), so the rest of the code only knows the full format.
"""

from __future__ import annotations

from .metrics import request_metrics, summarize

COMPACT = "compact"


def is_compact(run: dict) -> bool:
    return run.get("format") == COMPACT


def from_timeline(timeline) -> dict | None:
    """The compact fields (``stepStartMs`` ... ``requests[].slices``) of a lab-engine timeline.

    None when a decode batch is not the whole running set in its order (see the module doc).
    """
    index = {seq.id: n for n, seq in enumerate(timeline.sequences)}
    inputs = [seq.input_tokens for seq in timeline.sequences]
    outputs = [seq.output_tokens for seq in timeline.sequences]
    slices: list[list] = [[] for _ in timeline.sequences]
    running: dict[str, None] = {}
    leaving: dict[int, list[str]] = {}
    chunks, decode_steps = [], []
    for step, event in enumerate(timeline.events):
        batch = event.batch
        if batch.decode:
            if batch.decode != tuple(running):
                return None
            for rid in leaving.pop(len(decode_steps), ()):
                del running[rid]
            decode_steps.append(step)
        for chunk, start in zip(batch.prefill, event.prefill_from):
            n = index[chunk.id]
            chunks.append([step, n, start, chunk.tokens])
            if start + chunk.tokens == inputs[n]:  # the prefill is complete: first token
                slices[n].append([step, len(decode_steps), outputs[n] - 1])
                if outputs[n] > 1:
                    running[chunk.id] = None
                    leaving.setdefault(len(decode_steps) + outputs[n] - 2, []).append(chunk.id)
    return {
        "stepStartMs": [event.start_ms for event in timeline.events],
        "stepEndMs": [event.end_ms for event in timeline.events],
        "decodeSteps": decode_steps,
        "chunks": chunks,
        "slices": slices,
    }


def compact_run(policy: str, params: dict, device, timeline) -> dict | None:
    """The compact run entry of a lab-engine timeline (None: see ``from_timeline``)."""
    fields = from_timeline(timeline)
    if fields is None:
        return None
    metrics = [request_metrics(s.arrival_ms, s.token_times_ms) for s in timeline.sequences]
    steps = [
        {
            "startMs": e.start_ms,
            "endMs": e.end_ms,
            "prefill": e.batch.prefill,
            "decode": e.batch.decode,
        }
        for e in timeline.events
    ]
    requests = [
        {
            "id": seq.id,
            "arrivalMs": seq.arrival_ms,
            "inputTokens": seq.input_tokens,
            "outputTokens": seq.output_tokens,
            "slices": own,
        }
        for seq, own in zip(timeline.sequences, fields.pop("slices"), strict=True)
    ]
    head = {"policy": policy, "params": dict(params), "device": device.to_json(), "fault": None}
    return {
        **head,
        "format": COMPACT,
        **fields,
        "requests": requests,
        "summary": summarize(metrics, steps),
    }


def token_times(run: dict, request: dict) -> list[float]:
    """One request's token times, read off the step end times by its slices."""
    ends, decode_steps = run["stepEndMs"], run["decodeSteps"]
    times = []
    for step, first, count in request["slices"]:
        times.append(ends[step])
        times.extend(ends[s] for s in decode_steps[first : first + count])
    return times


def expand_run(run: dict) -> dict:
    """The full run entry a compact one stands for; a full entry comes back as it is."""
    if not is_compact(run):
        return run
    requests = []
    for req in run["requests"]:
        times = token_times(run, req)
        requests.append(
            {
                "id": req["id"],
                "arrivalMs": req["arrivalMs"],
                "inputTokens": req["inputTokens"],
                "outputTokens": req["outputTokens"],
                "tokenTimesMs": times,
                **request_metrics(req["arrivalMs"], times),
            }
        )
    return {
        "policy": run["policy"],
        "params": run["params"],
        "device": run["device"],
        "fault": run["fault"],
        "requests": requests,
        "events": _events(run),
        "summary": run["summary"],
    }


def _events(run: dict) -> list[dict]:
    ids = [req["id"] for req in run["requests"]]
    starts, ends = run["stepStartMs"], run["stepEndMs"]
    decode: list[list[str]] = [[] for _ in ends]
    prefill: list[list[dict]] = [[] for _ in ends]
    position = {}  # (step, request) -> place of its chunk in that step's batch
    for step, n, start, tokens in run["chunks"]:
        position[step, n] = len(prefill[step])
        prefill[step].append({"id": ids[n], "fromToken": start, "tokens": tokens})
    entries = [
        (step, position[step, n], n, first, count)
        for n, req in enumerate(run["requests"])
        for step, first, count in req["slices"]
    ]
    decode_steps = run["decodeSteps"]
    for _, _, n, first, count in sorted(entries):  # the order requests entered the running set
        rid = ids[n]
        for step in decode_steps[first : first + count]:
            decode[step].append(rid)
    return [
        {
            "index": i,
            "startMs": starts[i],
            "endMs": ends[i],
            "decode": decode[i],
            "prefill": prefill[i],
        }
        for i in range(len(ends))
    ]


def expand_document(doc: dict) -> dict:
    """A run file with every compact run expanded (the one normalising step of every reader)."""
    runs = doc.get("runs")
    if not isinstance(runs, list) or not any(isinstance(r, dict) and is_compact(r) for r in runs):
        return doc
    return {**doc, "runs": [expand_run(r) if isinstance(r, dict) else r for r in runs]}
