"""A run entry replayed step by step: what the viewer draws.

``load(path)`` reads a run file (full or compact) or a public test's expected snapshot
(``tests/expected/*.json``: token times and statuses only, no batches). ``replay(run)`` turns
a run entry into ``Step`` and ``Lane`` records (a compact entry: ``compact_drive``).

Each step is the state machine's own (``recorded.Recorded``, driven with the run's recorded
batches and admissions, as the grader's replay drives it):

- a step's queue length is the engine's waiting queue when its batch is applied (arrived,
  waiting for (the rest of) a prefill: not running, not swapped out, not finished);
- its KV pages are the engine's count right after its batch has run, before the requests it
  finished let theirs go: a page several requests share counts once, a paused stream keeps its
  pages, a preempted (recompute) or cancelled request holds none, a swapped-out one holds host
  pages, not device pages;
- its paused streams are the engine's paused streams when its batch is applied (a compact
  entry has no streams);
- rejections and cancellations belong to the first step ending at or after their status time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from pathlib import Path

from ..compact import is_compact, token_times
from ..recorded import Recorded
from .columns import LEFT, Columns, StepList, left_early, of_steps
from .compact_drive import replay_compact
from .driving import firsts, lane_fields, recorded, steady
from .marks import mark_steps


class ViewError(ValueError):
    """A file the viewer cannot draw; the message names the file and what is wrong."""


@dataclass(slots=True)
class Step:
    """One submission. The lists a step rarely has are shared empty tuples until it has them."""

    index: int
    start_ms: float
    end_ms: float
    prefill: list[tuple[str, int, int]]  # (request id, fromToken, tokens), batch order
    decode: list[str]  # the run entry's own list (not copied)
    preempt: Sequence[str] = ()
    swap_out: Sequence[str] = ()
    swap_in: Sequence[str] = ()
    queue: int = 0
    kv_pages: int = 0
    rejected: Sequence[str] = ()
    cancelled: Sequence[str] = ()
    firsts: Sequence[str] = ()  # requests whose prefill (or recompute) ended here: a token
    paused: Sequence[str] = ()  # streams paused when its batch was chosen, in pause order
    marks: dict | None = None  # what switched-on components draw of it (``Component.view``)

    @property
    def emits(self) -> list[str]:
        """The requests that got a token at its end."""
        return [*self.firsts, *self.decode]


@dataclass
class Lane:
    """One request's figures (its token times, which a long run has millions of, are not kept:
    ``Picture.token_times``)."""

    id: str
    arrival_ms: float
    status: str  # completed, rejected, cancelled (a plain run: completed or unfinished)
    end_ms: float | None  # finish or status time
    ttft_ms: float | None
    max_itl_ms: float | None
    first_ms: float | None  # its first token
    last_ms: float | None  # its last token
    tokens: int  # how many it got


@dataclass
class Picture:
    """One run, replayed: ``columns`` holds every step (what the page and the trace draw from),
    ``steps`` the same as ``Step`` records (a full entry's own, or made as a compact entry's
    are read), ``token_times()`` every lane's token times (a list per lane, made when asked)."""

    policy: str
    params: dict
    device: dict
    summary: dict
    steps: Sequence[Step]
    lanes: list[Lane]
    columns: Columns
    token_times: Callable[[], list[list[float]]]  # each lane's token times, listed on demand

    @property
    def pool(self) -> int | None:
        return self.device.get("kvPages")

    @property
    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.policy}({params})" if params else self.policy


@dataclass
class Snapshot:
    """A public test's expected run: each request's token times and status, no batches."""

    policy: str
    token_times_ms: dict[str, list[float]]
    status: dict[str, str]


def read_json(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_bytes())  # bytes: no second copy as text
    except OSError as exc:
        raise ViewError(f"{path}: cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ViewError(f"{path}: not a JSON file ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), (list, dict)):
        raise ViewError(f"{path}: not a run file (no 'runs'); write one with simulate.py --output")
    return doc


def runs_of(doc: dict, path: Path) -> list[dict]:
    """The run entries of a run file, full or compact (``replay`` takes both)."""
    if not isinstance(doc["runs"], list) or not doc["runs"]:
        raise ViewError(f"{path}: 'runs' must be a non-empty list of run entries")
    runs = []
    for n, run in enumerate(doc["runs"]):
        if not isinstance(run, dict) or not ("events" in run or is_compact(run)):
            raise ViewError(f"{path}: runs[{n}] has no events (not a simulate.py run entry)")
        runs.append(run)
    return runs


def snapshots_of(doc: dict, path: Path) -> list[Snapshot]:
    """The runs of an expected snapshot (``{"runs": {policy: {"tokenTimesMs": ...}}}``)."""
    found = []
    for policy, entry in doc["runs"].items():
        times = entry.get("tokenTimesMs") if isinstance(entry, dict) else None
        if not isinstance(times, dict):
            raise ViewError(f"{path}: runs.{policy} has no tokenTimesMs")
        status = entry.get("status") or {rid: "completed" for rid in times}
        found.append(Snapshot(policy, times, status))
    return found


def pick(items: list, policy: str | None, path: Path):
    """The run (or snapshot) of ``policy``; without one, the only run or the first."""
    if policy is None:
        return items[0]
    for item in items:
        if _policy(item) == policy:
            return item
    names = ", ".join(_policy(item) for item in items)
    raise ViewError(f"{path}: no run of policy {policy!r} (it has: {names})")


def _policy(item) -> str:
    return item["policy"] if isinstance(item, dict) else item.policy


def replay(run: dict) -> Picture:
    """``run`` (a full or compact entry) as steps and lanes."""
    try:
        if is_compact(run):
            cols, lanes = replay_compact(run)
            steps, lane_list = StepList(cols, Step), [Lane(*lane) for lane in lanes]
            return Picture(
                run["policy"], dict(run.get("params") or {}), run["device"], run["summary"],
                steps, lane_list, cols, lambda: token_times(run),
            )  # fmt: skip
        return _replay(run)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise ViewError(f"run {run.get('policy', '?')!r}: malformed run entry ({exc!r})") from None


def _replay(run: dict) -> Picture:
    """A full entry, its steps driven through the state machine (``recorded.Recorded``) with the
    run's own decisions: each step's queue and paused streams are the engine's when its batch
    is applied, its pages the engine's count right after it (summed on a device without a page
    limit too: ``count_pages``)."""
    device = run["device"]
    events = run["events"]
    steps = [
        Step(
            e["index"],
            e["startMs"],
            e["endMs"],
            [(c["id"], c["fromToken"], c["tokens"]) for c in e["prefill"]],
            e["decode"],
            e.get("preempt") or (),
            e.get("swapOut") or (),
            e.get("swapIn") or (),
        )
        for e in events
    ]
    left = [
        (r["statusMs"], r["id"], r["status"]) for r in run["requests"] if r.get("status") in LEFT
    ]
    landed = Columns([], [], [], [], [])
    left_early(left, [event["endMs"] for event in events], landed)
    for table, key in ((landed.rejected, "rejected"), (landed.cancelled, "cancelled")):
        for n, rids in table.items():
            setattr(steps[n], key, rids)
    driven = _recorded(run)
    state, seqs, prev_end = driven.state, driven.seqs, 0.0
    ends = [event["endMs"] for event in events]
    driven.fire(0.0, (0.0, 0.0))
    n = stop = 0  # the next step; the end of the steps that repeat its batch
    stretches = driven.stretches.stops is not None  # else every step runs alone
    while n < len(steps):
        step = steps[n]
        driven.gap(prev_end, step.start_ms)
        driven.reach(prev_end, step.start_ms)
        queue = len(state.waiting)
        paused = () if state.streams is None else tuple(state.streams.paused)
        base = state.tally.pages
        if n >= stop:
            stop = steady(events, n) if stretches else n + 1
        got = driven.stretch(driven.batch_of(events[n]), step.start_ms, ends, n, stop)
        if got.refused is not None:
            raise ViewError(f"step {step.index}: the rules refuse its batch ({got.refused[1]})")
        if got.opens is None:  # one step
            step.queue, step.paused, step.kv_pages = queue, paused, state.step_pages
        else:  # a stretch: the queue and paused streams stay, the pages grow as they open
            added = [0] * (got.steps + 1)
            for at in got.opens:
                added[at] += 1
            for taken, more in zip(steps[n : n + got.steps], islice(accumulate(added), 1, None)):
                taken.queue, taken.paused, taken.kv_pages = queue, paused, base + more
        if step.prefill:  # a prefill (or recompute) that ended here emitted a token here
            step.firsts = firsts(step.prefill, seqs, step.end_ms)
        n += got.steps
        prev_end = ends[n - 1]
    mark_steps(steps, run)
    lanes = [Lane(*lane_fields(r)) for r in run["requests"]]
    return Picture(
        run["policy"],
        dict(run.get("params") or {}),
        device,
        run["summary"],
        steps,
        lanes,
        of_steps(steps),
        lambda: [r["tokenTimesMs"] for r in run["requests"]],
    )


def _recorded(run: dict) -> Recorded:
    """The state machine on the run's device and requests, admitting as the run says."""
    return recorded(run["device"], run["requests"])
