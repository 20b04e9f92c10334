"""Compact run entries: step times plus each request's slices, and the one expansion to full.

A full run entry lists every token time and every submission's batch; on a large trace that is
hundreds of megabytes. A compact entry (``"format": "compact"``, see ``schemas/``) keeps every
field of the full entry except the per-token ones, and stores the timeline as tables:

- ``stepEndMs``: when each submission ended;
- ``idleStarts``: ``[step, startMs]`` for each submission that did not start when the previous
  one ended (the device idled until an arrival); every other one starts at the previous end,
  submission 0 at 0 ms;
- ``decodeSteps``: the indices of the submissions that decode (in increasing order);
- ``chunks``: every prefill chunk as ``[step, request index, fromToken, tokens]``, in step
  order and, within a step, in the batch's order;
- ``preempts`` (runs whose events list preemptions): ``[step, request index]`` likewise;
- ``slices``: ``[request index, step, decodeIndex, count]`` for each time a request entered the
  running set by a prefill (by request, then in time order): its token from the prefill that
  ended at submission ``step``, then ``count`` decode tokens at submissions
  ``decodeSteps[decodeIndex : decodeIndex + count]``;
- on a device with a host pool (31.6): ``swapOuts`` and ``swapIns``, ``[step, request index]``
  per sequence swapped out or in, and ``resumes``, ``[request index, step, decodeIndex, count]``
  for each time a request re-entered the running set by a swap-in at the start of ``step``:
  ``count`` decode tokens as for a slice, and no token at entry;
- ``requests``: the requests' own fields as columns (``{"id": [...], "arrivalMs": [...],
  ...}``, one entry per request in trace order); a field only some requests have is null for
  the others.

A decode batch holds every running request, in the order they entered the running set (the
earlier entering submission first; within one submission, its swap-ins in batch order, then its
chunk order). The engine keeps
that order and every policy of the course decodes all running requests at once; a run whose
batches do not is written in the full format (``compact_run`` returns None).

``expand_run`` turns a compact entry back into exactly the full one; readers of run files call
it (through ``expand_document``), so the rest of the code only knows the full format.
"""

from __future__ import annotations

from .metrics import request_metrics

COMPACT = "compact"
TOKEN_FIELDS = ("tokenTimesMs", "firstTokenMs", "finishMs", "ttftMs", "itlMs", "maxItlMs")
TOKEN_FIELDS += ("tpotMs", "e2eMs")
_AFTER_EVENTS = ("limits",)  # run keys that follow "events" in a full entry


def is_compact(run: dict) -> bool:
    return isinstance(run, dict) and run.get("format") == COMPACT


def request_count(run: dict) -> int:
    """How many requests ``run`` holds, in either format (a compact entry keeps them as columns)."""
    if is_compact(run):
        return len(run["requests"]["id"])
    return len(run["requests"])


def compact_run(run: dict, timeline) -> dict | None:
    """The compact form of ``run``, the full entry built from ``timeline`` (no fault switch)."""
    swaps = run["device"].get("hostPages", 0) > 0
    fields = _timeline_fields(timeline, preempts="limits" in run, swaps=swaps)
    if fields is None:
        return None
    head = {k: v for k, v in run.items() if k not in ("requests", "events", "summary")}
    requests = request_columns(run["requests"])
    return {**head, "format": COMPACT, **fields, "requests": requests, "summary": run["summary"]}


def request_columns(requests: list[dict]) -> dict[str, list]:
    """The requests' own fields (not the per-token ones) as columns, null where one is absent."""
    names = dict.fromkeys(k for req in requests for k in req if k not in TOKEN_FIELDS)
    return {name: [req.get(name) for req in requests] for name in names}


def idle_starts(starts: list[float], ends: list[float]) -> list[list]:
    """``[step, start]`` of each step that does not start when the previous one ended."""
    return [
        [step, start]
        for step, (start, before) in enumerate(zip(starts, [0.0, *ends]))
        if start != before
    ]


def step_starts(run: dict) -> list[float]:
    """Every step's start time of a compact entry."""
    ends = run["stepEndMs"]
    starts = ends[:1] + ends[:-1]  # of the type of ``ends`` (a list, or a staff tool's column)
    if starts:
        starts[0] = 0.0
    for step, start in run["idleStarts"]:
        starts[step] = start
    return starts


def _timeline_fields(timeline, preempts: bool, swaps: bool = False) -> dict | None:
    index = {seq.id: n for n, seq in enumerate(timeline.sequences)}
    seqs = timeline.sequences
    slices: list[list] = [[] for _ in seqs]
    resumes: list[list] = []
    emitted = [0] * len(seqs)  # tokens of the request's closed slices and resumes
    open_row: dict[str, tuple[list, int]] = {}  # running id -> (its row, tokens at entry)
    running: dict[str, None] = {}
    leaving: dict[int, list[str]] = {}
    chunks, decode_steps = [], []
    moves = {"preempts": [], "swapOuts": [], "swapIns": []}

    def enter(rid: str, row: list, at_entry: int) -> None:
        if row[3]:
            running[rid] = None
            open_row[rid] = (row, at_entry)
            leaving.setdefault(row[2] + row[3] - 1, []).append(rid)
        else:
            emitted[row[0]] += at_entry

    def leave(rid: str) -> None:  # its open row ends: it decoded up to the previous decode step
        if rid in running:
            del running[rid]
            row, at_entry = open_row.pop(rid)
            leaving[row[2] + row[3] - 1].remove(rid)
            row[3] = len(decode_steps) - row[2]
            emitted[row[0]] += at_entry + row[3]

    for step, event in enumerate(timeline.events):
        batch = event.batch
        for key, ids in (("preempts", batch.preempt), ("swapOuts", batch.swap_out)):
            for rid in ids:
                moves[key].append([step, index[rid]])
                leave(rid)
        for rid in batch.swap_in:
            n = index[rid]
            moves["swapIns"].append([step, n])
            row = [n, step, len(decode_steps), seqs[n].output_tokens - emitted[n]]
            resumes.append(row)
            enter(rid, row, 0)
        if batch.decode:
            if batch.decode != tuple(running):
                return None
            for rid in leaving.pop(len(decode_steps), ()):
                del running[rid]
                del open_row[rid]  # it finishes here
            decode_steps.append(step)
        for chunk, start in zip(batch.prefill, event.prefill_from):
            n = index[chunk.id]
            seq = seqs[n]
            chunks.append([step, n, start, chunk.tokens])
            if start + chunk.tokens < seq.input_tokens + emitted[n]:
                continue  # the prefill (or recompute) is not complete yet
            row = [n, step, len(decode_steps), seq.output_tokens - emitted[n] - 1]
            slices[n].append(row)
            enter(chunk.id, row, 1)
    ends = [event.end_ms for event in timeline.events]
    fields = {
        "stepEndMs": ends,
        "idleStarts": idle_starts([event.start_ms for event in timeline.events], ends),
        "decodeSteps": decode_steps,
        "chunks": chunks,
    }
    if preempts:
        fields["preempts"] = moves["preempts"]
    if swaps:
        fields |= {"swapOuts": moves["swapOuts"], "swapIns": moves["swapIns"]}
    fields["slices"] = [row for own in slices for row in own]
    if swaps:
        fields["resumes"] = sorted(resumes)
    return fields


def token_times(run: dict) -> list[list[float]]:
    """Every request's token times, read off the step end times by its slices and resumes."""
    ends, decode_steps = run["stepEndMs"], run["decodeSteps"]
    times: list[list[float]] = [[] for _ in run["requests"]["id"]]
    for n, step, first, count in run["slices"]:
        own = times[n]
        own.append(ends[step])
        own.extend(map(ends.__getitem__, decode_steps[first : first + count]))
    resumes = run.get("resumes", ())
    for n, _step, first, count in resumes:
        times[n].extend(map(ends.__getitem__, decode_steps[first : first + count]))
    if resumes:  # a request's rows of both kinds, merged in time order
        for n in {row[0] for row in resumes}:
            times[n].sort()
    return times


def request_records(run: dict) -> list[dict]:
    """The requests of a compact entry as the full entry's records, without token fields."""
    columns = run["requests"]
    total = len(columns["id"])
    for name, column in columns.items():
        if len(column) != total:
            raise ValueError(f"compact run: requests.{name} has {len(column)} entries, not {total}")
    names = list(columns)
    return [
        {name: value for name, value in zip(names, row) if value is not None}
        for row in zip(*columns.values())
    ]


def expand_run(run: dict) -> dict:
    """The full run entry a compact one stands for; a full entry comes back as it is."""
    if not is_compact(run):
        return run
    requests = request_records(run)
    for entry, times in zip(requests, token_times(run)):
        with_tokens(entry, times)
    out = {k: v for k, v in run.items() if k in ("policy", "params", "device", "fault")}
    out |= {"requests": requests, "events": _events(run, [req["id"] for req in requests])}
    out |= {k: run[k] for k in _AFTER_EVENTS if k in run}
    out["summary"] = run["summary"]
    return out


def with_tokens(entry: dict, times: list[float]) -> dict:
    """``entry`` (a request record) with its token times and the metrics they give (none
    unless it completed), as the full entry holds them."""
    entry["tokenTimesMs"] = times
    if entry.get("status", "completed") == "completed":
        entry.update(request_metrics(entry["arrivalMs"], times))
    else:
        entry.update(_NO_METRICS)
    return entry


_NO_METRICS = {k: None for k in TOKEN_FIELDS[1:]} | {"itlMs": []}


def _events(run: dict, ids: list[str]) -> list[dict]:
    starts, ends = step_starts(run), run["stepEndMs"]
    decode: list[list[str]] = [[] for _ in ends]
    prefill: list[list[dict]] = [[] for _ in ends]
    position = {}  # (step, request) -> place of its chunk in that step's batch
    for step, n, start, tokens in run["chunks"]:
        position[step, n] = len(prefill[step])
        prefill[step].append({"id": ids[n], "fromToken": start, "tokens": tokens})
    swapped_in, taken = {}, {}  # (step, request) -> place among the step's swap-ins
    for step, n in run.get("swapIns", ()):
        swapped_in[step, n] = taken[step] = taken.get(step, -1) + 1
    entries = [
        (step, 1, position[step, n], n, first, count) for n, step, first, count in run["slices"]
    ]
    entries += [
        (step, 0, swapped_in[step, n], n, first, count)
        for n, step, first, count in run.get("resumes", ())
    ]
    decode_steps = run["decodeSteps"]
    for *_, n, first, count in sorted(entries):  # the order requests entered the running set
        for step in decode_steps[first : first + count]:
            decode[step].append(ids[n])
    events = [
        {"index": i, "startMs": start, "endMs": end, "decode": decode[i], "prefill": prefill[i]}
        for i, (start, end) in enumerate(zip(starts, ends))
    ]
    for table, key in (("preempts", "preempt"), ("swapOuts", "swapOut"), ("swapIns", "swapIn")):
        if table in run:
            for event in events:
                event[key] = []
            for step, n in run[table]:
                events[step][key].append(ids[n])
    return events


def expand_document(doc: dict) -> dict:
    """A run file with every compact run expanded (the one normalising step of every reader)."""
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, list) or not any(is_compact(r) for r in runs):
        return doc
    return {**doc, "runs": [expand_run(r) for r in runs]}
