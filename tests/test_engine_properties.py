"""Hand-checkable properties of the engine under the reference policies, on random traces."""

import servesim
from hypothesis import given, settings
from hypothesis import strategies as st
from labtools import UNIT, rows_trace, simulate_cli

from grader import reference

POLICIES = reference.solution_policies(UNIT)

requests = st.lists(
    st.tuples(
        st.integers(0, 40).map(lambda q: q / 4),  # arrival on a 0.25 ms grid
        st.integers(1, 20),
        st.integers(1, 12),
    ),
    min_size=1,
    max_size=8,
)


def run(trace, policy, chunk, overhead=0.25):
    device = servesim.DeviceProfile(overhead_ms=overhead)
    params = {} if policy == "fcfs" else {"chunk": chunk}
    return reference.run_reference(UNIT, trace, policy, params, device)


@settings(max_examples=60, deadline=None)
@given(rows=requests, chunk=st.integers(1, 6), policy=st.sampled_from(["fcfs", "chunked"]))
def test_timeline_invariants(rows, chunk, policy):
    trace = rows_trace(rows)
    result = run(trace, policy, chunk)
    for req in result["requests"]:
        times = req["tokenTimesMs"]
        assert len(times) == req["outputTokens"]
        assert all(a < b for a, b in zip(times, times[1:]))
        assert times[0] > req["arrivalMs"]
    events = result["events"]
    for before, after in zip(events, events[1:]):
        assert before["endMs"] <= after["startMs"]
    for event in events:
        assert event["endMs"] > event["startMs"]
        for chunk_ in event["prefill"]:
            arrival = next(r["arrivalMs"] for r in result["requests"] if r["id"] == chunk_["id"])
            assert event["startMs"] >= arrival


@settings(max_examples=60, deadline=None)
@given(
    arrival=st.integers(0, 20),
    prompt=st.integers(1, 30),
    output=st.integers(1, 10),
    chunk=st.integers(1, 40),
)
def test_one_request_without_overhead_finishes_alike(arrival, prompt, output, chunk):
    trace = rows_trace([(arrival, prompt, output)])
    fcfs = run(trace, "fcfs", chunk, overhead=0.0)
    chunked = run(trace, "chunked", chunk, overhead=0.0)
    assert fcfs["summary"]["allDoneMs"] == chunked["summary"]["allDoneMs"]


def test_same_inputs_give_byte_identical_files(solved_lab):

    outputs = []
    for name in ("one.json", "two.json"):
        done = simulate_cli(solved_lab, "--trace", "unseen", "--chunk", "4", "--output", name)
        assert done.returncode == 0, done.stderr
        outputs.append((solved_lab / name).read_bytes())
    assert outputs[0] == outputs[1]
