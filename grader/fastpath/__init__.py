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

import importlib.util

from servesim.compact import COMPACT, expand_run

from ..collector import collector_off
from . import budgeted, plainrun, tracecolumns
from .columns import Table, floats, ints, view, zeros
from .executor import (
    Steps,
    Unsupported,
    Workload,
    execute,
    plain_columns,
    request_columns,
    request_ids,
)
from .planners import PLANNERS

# The fast path belongs to the ``traces`` extra, numpy included: without numpy it is not there
# (the lab engine runs). A planner's run does not use numpy (``plainrun``), so it is only
# looked for here; ``paged`` and runs with preemptions import it when they run.
if importlib.util.find_spec("numpy") is None:
    raise ModuleNotFoundError("No module named 'numpy'", name="numpy")


def planner_name(unit, policy: str) -> str | None:
    """The fast path unit.yaml names for ``policy`` (its ``fast_path`` key), if any."""
    spec = next((p for p in unit.policies if p["name"] == policy), {})
    return spec.get("fast_path")


def _steps(name: str, work: Workload, device, params: dict) -> Steps:
    """Run fast path ``name`` (raises ``Unsupported`` where it does not model the run)."""
    if name == "paged":
        from . import paged

        if set(params) != {"budget"}:
            raise Unsupported(f"paged parameters {sorted(params)}")
        return paged.execute(work, device, params["budget"])
    if device.kv_pages is not None and max(work.reserve) > device.kv_pages:
        raise Unsupported("the lab engine rejects a request at arrival")
    if name == "budgeted" and set(params) == {"budget"}:
        return budgeted.execute(work, device, params["budget"])  # the planner, fused in
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
    if getattr(device, "stream_buffer_bytes", None) is not None:
        return False  # streamed output (unit 09): the lab engine's output buffers
    if isinstance(trace.requests, tracecolumns.Requests):
        return True  # read into columns: plain requests only
    return not any(set(r) - _PLAIN_FIELDS for r in trace.raw.get("requests", []))


_PLAIN_FIELDS = {"id", "arrivalMs", "inputTokens", "outputTokens"}


def reference_run(unit, policy: str, params: dict, trace, device, fmt: str, extended: bool = False):
    """The run entry of reference ``policy`` (``fmt`` "compact" or "full"), or None.

    ``extended``: the entry has unit 08's fields (statuses, recomputes, limits, preemptions).
    """
    if not covers(unit, policy, trace, device):
        return None
    work = Workload.of(trace, device)
    with collector_off():  # only acyclic lists and dicts are made: collection passes are pure cost
        try:
            steps = _steps(planner_name(unit, policy), work, device, params)
        except Unsupported:
            return None
        run = compact_run(policy, params, device, trace, steps, extended)
        return run if fmt == COMPACT else expand_run(run)


def compact_run(policy: str, params: dict, device, trace, steps: Steps, extended=False) -> dict:
    """The compact run entry (``servesim.compact``) of what the executor produced.

    Its long lists are columns (``columns``): the run-file writer and the compact format's
    readers take them as the lists they stand for.
    """
    if steps.slices is None and steps.completed is None:  # a planner's run: no numpy needed
        arrival, prompt, output = plain_columns(trace)
        slices = plainrun.slices_of(steps, output)
        figures, status_ms = plainrun.summarize(arrival, steps, output)
        status, completed, prompt_sum = ["completed"] * len(output), len(output), sum(prompt)
    else:
        arrival, prompt, output = request_columns(trace)
        slices, figures, status, status_ms, completed = _figures(steps, arrival, output)
        prompt_sum = int((prompt if steps.completed is None else prompt[steps.completed]).sum())
    count = len(output)
    figures["requests"] = count
    columns = {
        "id": request_ids(trace),
        "arrivalMs": floats(arrival),
        "inputTokens": ints(prompt),
        "outputTokens": ints(output),
    }
    run = {"policy": policy, "params": dict(params), "device": device.to_json(), "fault": None}
    if extended:  # unit 08's fields: every request completed or was rejected at arrival
        # what the engine would enforce
        run["limits"] = {"budget": params.get("budget"), "queueCap": None}
        recomputes = steps.recomputes if steps.recomputes is not None else zeros(count)
        recomputed = steps.recomputed_tokens
        recomputed = recomputed if recomputed is not None else zeros(count)
        if steps.completed is not None:  # a rejected request's status time is its arrival
            figures["allDoneMs"] = max(status_ms)
        columns |= {"status": status, "statusMs": floats(status_ms)}
        columns |= {"recomputes": recomputes, "recomputedTokens": recomputed}
        figures |= {"completed": completed, "rejected": count - completed, "cancelled": 0}
        again = sum(recomputed)
        figures |= {"recomputes": sum(recomputes), "recomputedTokens": again}
        figures |= {
            "promptTokens": prompt_sum,
            "recomputeRatio": again / prompt_sum if prompt_sum else 0.0,
        }
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


def _figures(steps: Steps, arrival, output):
    """``(slices, figures, status, statusMs, completed)`` of a run with preemptions or
    rejections, with numpy (``summary``)."""
    import numpy as np

    from . import summary

    count = len(output)
    slices = steps.slices
    if slices is None:  # every request entered the running set once
        first_step, first_decode = view(steps.first_step), view(steps.first_decode)
        rows = np.stack((np.arange(count), first_step, first_decode, output - 1), axis=1)
        slices = Table.of(rows)
    done = steps.completed  # None: every request completed
    kept = (lambda column: column) if done is None else (lambda column: column[done])
    tokens = summary.request_tokens(steps.ends, steps.decode_steps, slices, kept(output))
    chunk_steps = steps.chunks.column(0)
    figures = summary.summarize(
        kept(arrival), steps.starts, steps.ends, steps.decode_steps, chunk_steps, tokens
    )
    status, status_ms = ["completed"] * count, tokens[1]
    if done is not None:  # a rejected request's status time is its arrival
        status = ["completed" if d else "rejected" for d in done.tolist()]
        status_ms = arrival.copy()
        status_ms[done] = tokens[1]
    return slices, figures, status, status_ms.tolist(), len(tokens[0])


__all__ = ["Unsupported", "compact_run", "covers", "reference_run"]
