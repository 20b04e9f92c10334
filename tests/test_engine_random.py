"""Properties of the engine under random policies that use every unit 08 feature (mixed steps,
preemption, B, K, M, deadlines, a queue cap), and the engine against the grader's replay,
which rebuilds the same run from the run file alone."""

from __future__ import annotations

from dataclasses import replace

from engine_policies import random_policy, scripted
from hypothesis import given, settings
from hypothesis import strategies as st
from servesim import DeviceProfile, PolicyError, Status, parse_trace, simulate
from servesim.runfile import build_run
from servesim.view import Tally

from grader.verify import replay_run
from grader.verify.problems import ProblemKind

request_rows = st.lists(
    st.tuples(
        st.integers(0, 60).map(lambda q: q / 2),  # arrival
        st.integers(1, 30),  # inputTokens
        st.integers(1, 10),  # outputTokens
        st.integers(0, 6),  # declared extra output (maxOutputTokens - outputTokens)
        st.one_of(st.none(), st.integers(1, 120)),  # deadlineMs
    ),
    min_size=1,
    max_size=10,
)
devices = st.builds(
    lambda k, m, page, per_seq, context: DeviceProfile(
        decode_ms_per_seq=per_seq,
        max_active=k,
        kv_pages=m,
        page_tokens=page,
        prefill_ms_per_context_token=context[0],
        decode_ms_per_context_token=context[1],
    ),
    st.one_of(st.none(), st.integers(1, 5)),
    st.one_of(st.none(), st.integers(3, 30)),
    st.sampled_from([1, 2, 4, 16]),
    st.sampled_from([0.0, 0.5]),
    st.sampled_from([(0.0, 0.0), (0.0625, 0.0), (0.0, 0.125), (0.03125, 0.25)]),  # exact sums
)
limits = st.fixed_dictionaries(
    {
        "budget": st.one_of(st.none(), st.integers(1, 40)),
        "queue_cap": st.one_of(st.none(), st.integers(1, 4)),
    }
)


def make_trace(rows):
    reqs = []
    for i, (arrival, n_in, n_out, extra, deadline) in enumerate(rows):
        req = {"id": f"R{i}", "arrivalMs": arrival, "inputTokens": n_in, "outputTokens": n_out}
        if extra:
            req["maxOutputTokens"] = n_out + extra
        if deadline is not None:
            req["deadlineMs"] = deadline
        reqs.append(req)
    return parse_trace({"name": "random", "requests": reqs})


def checked(policy, device):
    """``policy``, with the engine's running totals compared at every decision to a recount
    over the live sequences, and K and M checked after the previous step's releases."""

    def wrapped(view):
        live = [*view.waiting, *view.running]
        recount = Tally.of(device, live)
        assert (view.active, view.pages_held, view.pages_reserved) == (
            recount.active,
            recount.pages,
            recount.reserved,
        )
        assert device.max_active is None or view.active <= device.max_active
        assert device.kv_pages is None or view.pages_held <= device.kv_pages
        return policy(view)

    return wrapped


def emissions(seq, events):
    """The end time of every event that gives ``seq`` a token, by the token rule applied to
    the log: a decode gives one; a prefill chunk gives one when it reaches prompt + emitted."""
    ends = []
    for event in events:
        if seq.id in event.batch.decode:
            ends.append(event.end_ms)
        for chunk, start in zip(event.batch.prefill, event.prefill_from, strict=True):
            if chunk.id == seq.id and start + chunk.tokens == seq.input_tokens + len(ends):
                ends.append(event.end_ms)
    return ends


@settings(max_examples=120, deadline=None)
@given(rows=request_rows, device=devices, lim=limits, seed=st.integers(0, 10**6))
def test_engine_properties_under_random_policies(rows, device, lim, seed):
    trace = make_trace(rows)
    timeline = simulate(trace, checked(random_policy(seed), device), device, **lim)
    for seq in timeline.sequences:
        times = seq.token_times_ms
        assert times == sorted(times) and len(set(times)) == len(times)  # no token twice
        assert times == emissions(seq, timeline.events)  # tokens conserved, step by step
        if seq.status is Status.COMPLETED:
            assert len(times) == seq.output_tokens
        elif seq.status is Status.CANCELLED:
            assert times == [] and seq.status_ms > seq.arrival_ms + seq.deadline_ms
        else:
            assert seq.status is Status.REJECTED and times == []
            assert not any(seq.id in e.batch.ids for e in timeline.events)
    run = build_run("random", {}, device, timeline, None, extended=True, limits=_json(lim))
    statuses = [r["status"] for r in run["requests"]]
    assert [r["id"] for r in run["requests"]] == [r.id for r in trace.requests]
    assert statuses == [s.status.value for s in timeline.sequences]
    summary = run["summary"]
    for name in ("completed", "rejected", "cancelled"):
        assert summary[name] == statuses.count(name)
    assert summary["requests"] == len(trace.requests)


def _json(lim):
    return {"budget": lim["budget"], "queueCap": lim["queue_cap"]}


@settings(max_examples=120, deadline=None)
@given(rows=request_rows, device=devices, lim=limits, seed=st.integers(0, 10**6))
def test_replay_rebuilds_the_engine_run_from_the_run_file(rows, device, lim, seed):
    trace = make_trace(rows)
    timeline = simulate(trace, random_policy(seed), device, **lim)
    run = build_run("random", {}, device, timeline, None, extended=True, limits=_json(lim))
    problems, replay = replay_run(run, trace, device.to_json())
    assert problems == []
    assert replay.token_times == {s.id: s.token_times_ms for s in timeline.sequences}
    assert replay.ends == [e.end_ms for e in timeline.events]
    assert replay.recomputes == {
        s.id: (s.recomputes, s.recomputed_tokens) for s in timeline.sequences
    }


def tighter(device, lim):
    """Each limit of the run one notch tighter (and each unset one set to a small value)."""
    yield "maxActive", replace(device, max_active=max(1, (device.max_active or 3) - 1)), lim
    yield "kvPages", replace(device, kv_pages=max(1, (device.kv_pages or 12) - 2)), lim
    yield "budget", device, {**lim, "budget": max(1, (lim["budget"] or 8) - 2)}


@settings(max_examples=80, deadline=None)
@given(rows=request_rows, device=devices, lim=limits, seed=st.integers(0, 10**6))
def test_replay_refuses_a_schedule_exactly_when_the_engine_would(rows, device, lim, seed):
    """Replayed under tighter limits, the same steps are refused by the replay exactly when the
    engine, fed the same steps, stops with a PolicyError or reaches other statuses."""
    trace = make_trace(rows)
    timeline = simulate(trace, random_policy(seed), device, **lim)
    run = build_run("random", {}, device, timeline, None, extended=True, limits=_json(lim))
    statuses = [s.status for s in timeline.sequences]
    for _name, capped, capped_lim in tighter(device, lim):
        try:
            again = simulate(trace, scripted(timeline.events), capped, **capped_lim)
            engine_ok = [s.status for s in again.sequences] == statuses
        except (PolicyError, StopIteration):
            engine_ok = False
        forged = {**run, "limits": _json(capped_lim)}
        problems, _ = replay_run(forged, trace, capped.to_json())
        bad = [p for p in problems if p.kind is ProblemKind.INVALID_SCHEDULE]
        assert (not bad) == engine_ok, (capped, capped_lim, problems)
