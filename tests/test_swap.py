"""Swap as the alternative to recompute (31.6): the device's host pool and transfer costs, the
engine's checks and charges, the run file (full and compact), and the trusted replay.

Expected times are worked out here from the device rules, step by step, not read off a run.
"""

from __future__ import annotations

import copy
import json

import pytest
from randomruns import PRESSURE, pressure_device
from servesim import Batch, DeviceProfile, PolicyError, PrefillChunk, parse_trace, simulate
from servesim.compact import compact_run, expand_run
from servesim.runfile import build_run
from servesim.swapping import swap_long

from grader import reference
from grader.units import load_unit
from grader.verify import ProblemKind, verify_run

U08 = load_unit("unit08")
PREFILL, BATCH, OVERHEAD = 1.0, 2.0, 0.5
PER_PAGE, SYNC = 0.25, 1.0


def device(**changes) -> DeviceProfile:
    base = dict(
        prefill_ms_per_token=PREFILL,
        decode_batch_ms=BATCH,
        overhead_ms=OVERHEAD,
        page_tokens=4,
        kv_pages=10,
        swap_ms_per_page=PER_PAGE,
        swap_sync_ms=SYNC,
        host_pages=3,
    )
    return DeviceProfile(**(base | changes))


def trace():
    rows = [("A", 8, 4), ("B", 4, 2)]
    requests = [
        {"id": rid, "arrivalMs": 0, "inputTokens": n_in, "outputTokens": n_out}
        for rid, n_in, n_out in rows
    ]
    return parse_trace({"name": "swap", "requests": requests})


SCRIPT = [
    Batch(prefill=[PrefillChunk("A", 8)]),
    Batch(prefill=[PrefillChunk("B", 4)], swap_out=["A"]),
    Batch(decode=["B", "A"], swap_in=["A"]),
    Batch(decode=["A"]),
    Batch(decode=["A"]),
]


def scripted(batches, seen=None):
    steps = iter(batches)

    def policy(view):
        batch = next(steps)
        if seen is not None:
            swapped = [s.id for s in view.swapped]
            seen.append((swapped, view.host_pages_held, view.free_host_pages, view.step_ms(batch)))
        return batch

    return policy


def run_entry(dev, batches=SCRIPT):
    timeline = simulate(trace(), scripted(batches), dev)
    return build_run("script", {}, dev, timeline, None, extended=True), timeline


def test_round_trip_charges_the_transfer_in_the_step_that_moves_the_pages():
    """A (8 tokens: 2 pages of 4) goes out while B prefills, comes back and decodes with B."""
    seen = []
    timeline = simulate(trace(), scripted(SCRIPT, seen), device())
    a_pages = 2  # ceil(8 / 4): A's cache when it leaves (prefill only, no decode yet)
    transfer = a_pages * PER_PAGE + SYNC
    step = [
        OVERHEAD + 8 * PREFILL,  # A's prompt
        OVERHEAD + 4 * PREFILL + transfer,  # B's prompt, A's pages go to the host
        OVERHEAD + BATCH + transfer,  # A's pages come back; A and B decode
        OVERHEAD + BATCH,
        OVERHEAD + BATCH,
    ]
    ends = [sum(step[: k + 1]) for k in range(len(step))]
    assert [e.end_ms for e in timeline.events] == pytest.approx(ends)
    times = {s.id: s.token_times_ms for s in timeline.sequences}
    assert times["A"] == pytest.approx([ends[0], ends[2], ends[3], ends[4]])
    assert times["B"] == pytest.approx([ends[1], ends[2]])
    # the view: nothing swapped, then A with its 2 host pages of the 3, then back
    assert [row[:3] for row in seen[1:4]] == [([], 0, 3), (["A"], 2, 1), ([], 0, 3)]
    assert [row[3] for row in seen] == pytest.approx(step)  # t-hat includes the transfers
    assert [s.swaps for s in timeline.sequences] == [1, 0]


def test_run_file_records_swaps_and_the_replay_accepts_them():
    dev = device()
    run, timeline = run_entry(dev)
    assert [(e["swapOut"], e["swapIn"]) for e in run["events"]] == [
        ([], []),
        (["A"], []),
        ([], ["A"]),
        ([], []),
        ([], []),
    ]
    assert run["device"]["hostPages"] == 3 and run["device"]["swapMsPerPage"] == PER_PAGE
    assert verify_run(run, trace().raw, dev.to_json()) == []
    compact = compact_run(run, timeline)
    assert compact["swapOuts"] == [[1, 0]] and compact["swapIns"] == [[2, 0]]
    assert compact["resumes"] == [[0, 2, 0, 3]]  # A re-enters at step 2, decode step 0: 3 tokens
    assert expand_run(json.loads(json.dumps(compact))) == run


def test_device_without_swap_says_nothing_of_it():
    plain = DeviceProfile()
    assert not {"swapMsPerPage", "swapSyncMs", "hostPages"} & set(plain.to_json())
    assert DeviceProfile.from_json(device().to_json()) == device()
    with pytest.raises(ValueError, match="hostPages must be an integer >= 0"):
        DeviceProfile.from_json({"hostPages": -1})
    with pytest.raises(ValueError, match="swapMsPerPage must be a finite number >= 0"):
        DeviceProfile.from_json({"swapMsPerPage": -0.5})
    steps = [SCRIPT[0], Batch(prefill=[PrefillChunk("B", 4)]), Batch(decode=["A", "B"])]
    timeline = simulate(trace(), scripted([*steps, *SCRIPT[3:]]), plain)
    run = build_run("script", {}, plain, timeline, None, extended=True)
    assert all("swapOut" not in e and "swapIn" not in e for e in run["events"])


@pytest.mark.parametrize(
    "changes, second, message",
    [
        ({"host_pages": 1}, SCRIPT[1], "needs 2 host pages, host pool 1"),
        ({"host_pages": 0}, SCRIPT[1], "needs 2 host pages, host pool 0"),
        ({}, Batch(prefill=[PrefillChunk("B", 4)], swap_in=["A"]), "swap in of 'A'"),
        ({}, Batch(decode=["A"], swap_out=["B"]), "swap out of 'B'"),
        ({}, Batch(decode=["A"], swap_out=["A"]), "appears twice"),
        ({}, Batch(swap_out=["A"]), "empty batch"),
    ],
)
def test_bad_swaps_are_refused(changes, second, message):
    with pytest.raises(PolicyError, match=message):
        simulate(trace(), scripted([SCRIPT[0], second]), device(**changes))


def test_a_swapped_out_sequence_cannot_decode_or_be_preempted():
    for third in (Batch(decode=["B", "A"]), Batch(decode=["B"], preempt=["A"])):
        with pytest.raises(PolicyError, match="'A'"):
            simulate(trace(), scripted([*SCRIPT[:2], third]), device())


def test_swap_in_must_fit_the_device_pool():
    """B holds 1 page (4 tokens) + 1 for its decode; A's 2 pages and its decode's new page
    need 5 of a 4-page pool."""
    with pytest.raises(PolicyError, match="needs 5 KV pages, budget 4"):
        simulate(trace(), scripted(SCRIPT), device(kv_pages=4))


def test_measured_runs_swap_and_the_hook_sees_what_moves():
    """The real-device runner swaps too (realdevice/host_pool.py): its hook gets each moved
    sequence's cached positions, and the clock follows the measured durations."""
    seen = []

    def execute(batch, context):
        seen.append((batch.swap_out, batch.swap_in, dict(context)))
        return 1.0

    timeline = simulate(trace(), scripted(SCRIPT), device(), execute=execute)
    assert seen[1] == (("A",), (), {"A": 8, "B": 0})  # A out with its 8 positions
    assert seen[2] == ((), ("A",), {"A": 8, "B": 4})  # back in, and decoded in the same step
    assert [e.end_ms for e in timeline.events] == [1.0, 2.0, 3.0, 4.0, 5.0]


def forged(dev, mutate):
    run, _ = run_entry(dev)
    run = copy.deepcopy(run)
    mutate(run)
    return run


def problems(run, dev):
    return verify_run(run, trace().raw, dev.to_json())


def test_replay_rejects_an_uncharged_transfer():
    """A run made on a device whose transfers cost nothing, checked against the device it
    claims: every step that moved pages is too short by the pages' and syncs' cost."""
    free = device(swap_ms_per_page=0.0, swap_sync_ms=0.0)
    run, _ = run_entry(free)
    run["device"] = device().to_json()
    found = problems(run, device())
    assert found[0].kind is ProblemKind.INVALID_SCHEDULE  # later steps overlap the true ends
    charged = [p for p in found if p.statistic == "events[].endMs"]
    assert charged and "1.50 ms of it moving 2 pages to or from the host pool" in charged[0].message
    assert verify_run(run, trace().raw, free.to_json()) == []


def test_replay_rejects_a_host_pool_overflow():
    found = problems(run_entry(device())[0], device(host_pages=1))
    assert [p.statistic for p in found][:1] == ["hostPages"]
    assert "needs 2 host pages, host pool 1" in found[0].message


def test_replay_rejects_a_swap_in_of_what_never_went_out():
    def never_out(run):
        run["events"][1]["swapOut"] = []

    found = problems(forged(device(), never_out), device())
    named = [p for p in found if p.statistic == "swapIn"]
    assert (
        named
        and "swap in of 'A' at " in named[0].message
        and "it is not swapped out" in named[0].message
    )
    assert named[0].kind is ProblemKind.INVALID_SCHEDULE


def test_replay_rejects_a_decode_of_a_swapped_out_sequence():
    def never_back(run):
        run["events"][2]["swapIn"] = []

    found = problems(forged(device(), never_back), device())
    assert found[0].statistic == "decode while swapped out"
    assert "decode of 'A' at 14.50 ms: it is swapped out" in found[0].message


def test_replay_rejects_a_swap_out_of_a_sequence_that_is_not_running():
    def swap_b_early(run):
        run["events"][0]["swapOut"] = ["B"]

    found = problems(forged(device(), swap_b_early), device())
    assert found[0].statistic == "swapOut"


@pytest.mark.parametrize("host_pages", [64, 10])
def test_swap_long_around_paged(host_pages):
    """Four requests outgrow a 64-page pool while they decode, so ``paged`` preempts the newest
    running one: swapped when the host pool takes its 13+ pages, recomputed when it cannot;
    every run passes the replay and its compact form expands to it."""
    paged = reference.solution_policies(U08).paged
    pressure = parse_trace({"name": "pressure", "requests": PRESSURE})
    dev = pressure_device(host_pages)
    runs = {}
    for min_tokens in (0, 10**9):
        policy = swap_long(lambda view: paged(view, 512), min_tokens)
        timeline = simulate(pressure, policy, dev, budget=512)
        run = build_run("paged", {"budget": 512}, dev, timeline, None, extended=True)
        assert problems_of(run, pressure, dev) == []
        assert expand_run(compact_run(run, timeline)) == run
        runs[min_tokens] = run
    count = {
        k: sum(len(e[name]) for e in run["events"] for name in ("swapOut", "preempt"))
        for k, run in runs.items()
    }
    swapped = sum(len(e["swapOut"]) for e in runs[0]["events"])
    assert count[0] == count[10**9] >= 1  # the same preemptions, made one way or the other
    assert (swapped >= 1) == (host_pages >= 13)
    assert all(not e["swapOut"] for e in runs[10**9]["events"])
    if swapped:  # nothing recomputed and no prompt prefilled twice
        assert runs[0]["summary"]["recomputedTokens"] < runs[10**9]["summary"]["recomputedTokens"]


def problems_of(run, trace_, dev):
    return verify_run(run, trace_.raw, dev.to_json())


@pytest.mark.parametrize("unit", ["unit07", "unit08"])
def test_swap_runs_match_the_published_schemas(unit):
    """Both formats of a run that swaps validate against each lab's run schema; a compact run
    with a field the schema does not name still fails."""
    from servesim.runfile import build_document

    from grader.verify.runschema import validate_run_file

    lab = load_unit(unit)
    dev = device()
    timeline = simulate(trace(), scripted(SCRIPT), dev)
    run = build_run("script", {}, dev, timeline, None, extended=unit == "unit08")
    compact = compact_run(run, timeline)
    for entry in (run, compact):
        assert validate_run_file(lab, build_document(trace(), [entry])) is None
    bad = compact | {"swapped": []}
    assert validate_run_file(lab, build_document(trace(), [bad])) is not None
