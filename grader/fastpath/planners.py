"""The reference policies, restated as planners over queue counters (see ``executor``).

Each planner makes the decision its reference policy makes from a ``SchedulerView``; the
differential tests run both on the same traces and require identical timelines. A policy is
covered only where its unit.yaml entry names one of these planners (``fast_path: NAME``).
"""

from __future__ import annotations

from collections.abc import Callable

from .executor import Plan, Planner, QueueState, Unsupported, Workload


def fcfs(work: Workload, device) -> Planner:
    """Complete prefill first (unit 07's ``fcfs``).

    The head's whole remaining prompt, else decode everyone.
    """

    def plan(st: QueueState) -> Plan:
        if st.head < st.arrived:
            tokens = work.prompt[st.head] - st.head_done
            return False, [(st.head, tokens)], tokens
        return True, [], 0

    return plan


def chunked(work: Workload, device, chunk: int) -> Planner:
    """Chunked prefill (unit 07's ``chunked``).

    A decode batch before each chunk of at most ``chunk`` tokens.
    """

    def plan(st: QueueState) -> Plan:
        waiting = st.head < st.arrived
        if st.running and (not st.decoded_last or not waiting):
            return True, [], 0
        tokens = min(chunk, work.prompt[st.head] - st.head_done)
        return False, [(st.head, tokens)], tokens

    return plan


def budgeted(work: Workload, device, budget: int) -> Planner:
    """A token budget per step (unit 08's ``budgeted``).

    Decode everyone, then FIFO chunks in the rest of the budget.

    A request that has not started starts only while the active cap allows and, with a page
    pool, while its reservation fits beside the holders'; the first that cannot stops the fill.
    """
    cap, pool = device.max_active, device.kv_pages
    prompt, reserve = work.prompt, work.reserve

    def plan(st: QueueState) -> Plan:
        running = st.running
        left = budget - running
        if left < 0:
            raise Unsupported("more running requests than the budget")
        pos, done, arrived = st.head, st.head_done, st.arrived
        holders, reserved = running + (1 if done else 0), st.reserved
        chunks = []
        while left > 0 and pos < arrived:
            if not done:
                if cap is not None and holders >= cap:
                    break
                if pool is not None and reserved + reserve[pos] > pool:
                    break
                holders, reserved = holders + 1, reserved + reserve[pos]
            need = prompt[pos] - done
            tokens = left if left < need else need
            chunks.append((pos, tokens))
            left -= tokens
            pos, done = pos + 1, 0
        return running > 0, chunks, budget - running - left

    return plan


# planner name (unit.yaml ``fast_path``) -> (make the planner from the workload, device and
# params; does it keep the
# active cap and reserve KV pages itself, so that K and a page pool hold by construction)
PLANNERS: dict[str, tuple[Callable[..., Planner], bool]] = {
    "fcfs": (fcfs, False),
    "chunked": (chunked, False),
    "budgeted": (budgeted, True),
}
