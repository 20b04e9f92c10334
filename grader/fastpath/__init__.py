"""The staff fast path: reference runs of large traces without the per-token Python work.

``reference_run(unit, policy, params, trace, device, fmt)`` returns the run entry the lab
engine would produce for the reference ``policy`` (compact, or expanded to full), or None when
the fast path does not cover the run; then the caller uses the lab engine. Covered: the
policies whose unit.yaml entry names a fast path (``fast_path: NAME``): a planner of
``planners.PLANNERS`` (it restates the policy's decisions for ``executor``) or ``paged``
(``paged.execute``, vLLM V1's scheduler with its preemptions), on devices without
per-context-token costs, without a host pool or transfer costs (swap, 31.6: no policy can swap
without a host pool, so no covered run swaps), without a page pool unless the policy manages
pages, and without a fault switch. ``executor`` and ``paged`` explain the step structure that
makes this possible; ``tests/grader/test_fastpath.py`` and ``test_fastpath_paged.py`` prove the
timelines identical to the lab engine's.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

from servesim.compact import COMPACT, expand_run

from . import paged, summary
from .executor import Steps, Unsupported, Workload, execute
from .planners import PLANNERS


def planner_name(unit, policy: str) -> str | None:
    """The fast path unit.yaml names for ``policy`` (its ``fast_path`` key), if any."""
    spec = next((p for p in unit.policies if p["name"] == policy), {})
    return spec.get("fast_path")


def _steps(name: str, work: Workload, device, params: dict) -> Steps:
    """Run fast path ``name`` (raises ``Unsupported`` where it does not model the run)."""
    if name == "paged":
        if set(params) != {"budget"}:
            raise Unsupported(f"paged parameters {sorted(params)}")
        return paged.execute(work, device, params["budget"])
    if device.kv_pages is not None and max(work.reserve) > device.kv_pages:
        raise Unsupported("the lab engine rejects a request at arrival")
    make, capped = PLANNERS[name]
    return execute(work, device, make(work, device, **params), capped)


def _manages_pages(name: str) -> bool:
    """Whether fast path ``name`` keeps a page pool itself (reservations, or paged growth)."""
    return name == "paged" or PLANNERS[name][1]


def covers(unit, policy: str, trace, device) -> bool:
    """Whether the fast path can run ``policy`` of ``unit`` on this trace and device."""
    name = planner_name(unit, policy)
    if name != "paged" and name not in PLANNERS:
        return False
    if device.prefill_ms_per_context_token or device.decode_ms_per_context_token:
        return False
    if device.swaps or device.swap_ms_per_page or device.swap_sync_ms:
        return False  # swap (31.6): the lab engine's host pool and transfers
    if device.kv_pages is not None and not _manages_pages(name):
        return False
    if getattr(device, "prefix_caching", False):
        return False  # shared-prefix pages (unit 09): the lab engine's prefix cache
    return not any(set(r) - _PLAIN_FIELDS for r in trace.raw.get("requests", []))


_PLAIN_FIELDS = {"id", "arrivalMs", "inputTokens", "outputTokens"}


def reference_run(unit, policy: str, params: dict, trace, device, fmt: str, extended: bool = False):
    """The run entry of reference ``policy`` (``fmt`` "compact" or "full"), or None.

    ``extended``: the entry has unit 08's fields (statuses, recomputes, limits, preemptions).
    """
    if not covers(unit, policy, trace, device):
        return None
    work = Workload.of(trace, device)
    with _no_gc():  # only acyclic lists and dicts are made: collection passes are pure cost
        try:
            steps = _steps(planner_name(unit, policy), work, device, params)
        except Unsupported:
            return None
        run = compact_run(policy, params, device, trace, steps, extended)
        return run if fmt == COMPACT else expand_run(run)


def _where(column: list, keep: list[bool]) -> list:
    return [value for value, k in zip(column, keep) if k]


@contextmanager
def _no_gc():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def compact_run(policy: str, params: dict, device, trace, steps: Steps, extended=False) -> dict:
    """The compact run entry (``servesim.compact``) of what the executor produced."""
    reqs = trace.requests
    output = [r.output_tokens for r in reqs]
    arrival = [r.arrival_ms for r in reqs]
    slices = steps.slices
    if slices is None:  # every request entered the running set once
        slices = [
            [n, step, first, out - 1]
            for n, (step, first, out) in enumerate(
                zip(steps.first_step, steps.first_decode, output)
            )
        ]
    done = steps.completed  # None: every request completed
    kept = (lambda column: column) if done is None else (lambda column: _where(column, done))
    tokens = summary.request_tokens(steps.ends, steps.decode_steps, slices, kept(output))
    figures = summary.summarize(
        kept(arrival),
        steps.starts,
        steps.ends,
        steps.decode_steps,
        [c[0] for c in steps.chunks],
        tokens,
    )
    figures["requests"] = len(reqs)
    columns = {
        "id": [r.id for r in reqs],
        "arrivalMs": arrival,
        "inputTokens": [r.input_tokens for r in reqs],
        "outputTokens": output,
    }
    run = {"policy": policy, "params": dict(params), "device": device.to_json(), "fault": None}
    if extended:  # unit 08's fields: every request completed or was rejected at arrival
        # what the engine would enforce
        run["limits"] = {"budget": params.get("budget"), "queueCap": None}
        count = len(reqs)
        recomputes = steps.recomputes or [0] * count
        recomputed = steps.recomputed_tokens or [0] * count
        status, status_ms = ["completed"] * count, tokens[1].tolist()
        if done is not None:  # a rejected request's status time is its arrival
            finish = iter(status_ms)
            status = [s if d else "rejected" for s, d in zip(status, done)]
            status_ms = [next(finish) if d else a for a, d in zip(arrival, done)]
            figures["allDoneMs"] = max(status_ms)
        columns |= {"status": status, "statusMs": status_ms}
        columns |= {"recomputes": recomputes, "recomputedTokens": recomputed}
        completed = len(tokens[0])
        figures |= {"completed": completed, "rejected": count - completed, "cancelled": 0}
        admitted = columns["inputTokens"] if done is None else kept(columns["inputTokens"])
        prompt, again = sum(admitted), sum(recomputed)
        figures |= {"recomputes": sum(recomputes), "recomputedTokens": again}
        figures |= {"promptTokens": prompt, "recomputeRatio": again / prompt if prompt else 0.0}
    return run | {
        "format": COMPACT,
        "stepEndMs": steps.ends,
        "idleStarts": steps.idle,
        "decodeSteps": steps.decode_steps,
        "chunks": steps.chunks,
        **({"preempts": steps.preempts or []} if extended else {}),
        "slices": slices,
        "requests": columns,
        "summary": figures,
    }


__all__ = ["Unsupported", "compact_run", "covers", "reference_run"]
