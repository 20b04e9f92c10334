"""The picture of a run (servesim.runview, view.py, infralab view): what it counts, the first
difference it names, the page and the Chrome trace it writes, its errors, and the hint a
failing public test prints. The browser and axe-core check is tests/site/test_view_page.py."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import astuple
from pathlib import Path

import pytest
from labtools import copy_lab, run_ref
from servesim import DeviceProfile, PolicyError, compact, parse_trace, simulate
from servesim import cli as lab_cli
from servesim.compact import expand_run
from servesim.runfile import build_run
from servesim.runview import chrome, diff, model, page
from servesim.runview.cli import main
from servesim.runview.hint import show_command
from servesim.swapping import swap_long
from unit08.u08tools import cache_after_steps, device, pages, run08

from grader import reference
from grader.units import load_unit

EXPECTED07 = Path(__file__).resolve().parent.parent / "starter/unit07/tests/expected"


@pytest.fixture(scope="module")
def paged_burst():
    return run08("burst", "paged", device("pool-256"))


@pytest.fixture(scope="module")
def budgeted_burst():
    return run08("burst", "budgeted", device("pool-256"))


def write_doc(path: Path, *runs: dict) -> Path:
    path.write_text(json.dumps({"formatVersion": 1, "trace": {"name": "t"}, "runs": list(runs)}))
    return path


@pytest.mark.parametrize("policy", ["paged", "budgeted"])
def test_kv_pages_are_the_log_replay(policy, paged_burst, budgeted_burst):
    run = paged_burst if policy == "paged" else budgeted_burst
    picture = model.replay(run)
    want = [pages(cache) for cache in cache_after_steps(run)]
    assert [s.kv_pages for s in picture.steps] == want
    assert max(want) > 0 and max(want) <= picture.pool


def _waiting(run: dict, at_ms: float) -> int:
    """Arrived by ``at_ms``, no first token by then, not turned away by then (no preemption)."""
    return sum(
        1
        for r in run["requests"]
        if r["arrivalMs"] <= at_ms
        and not (r["tokenTimesMs"] and r["tokenTimesMs"][0] <= at_ms)
        and not (r.get("status") in ("rejected", "cancelled") and r["statusMs"] <= at_ms)
    )


@pytest.mark.parametrize("which", ["fcfs", "chunked", "budgeted"])
def test_queue_length_counts_the_waiting(which, budgeted_burst):
    run = budgeted_burst if which == "budgeted" else run_ref("mixed", which)
    assert not any(e.get("preempt") for e in run["events"])
    steps = model.replay(run).steps
    assert [s.queue for s in steps] == [_waiting(run, s.start_ms) for s in steps]
    assert max(s.queue for s in steps) > 0


def test_rejections_and_cancellations_land_in_their_step(paged_burst, budgeted_burst):
    for run in (paged_burst, budgeted_burst):
        steps = model.replay(run).steps
        status = {r["id"]: r for r in run["requests"]}
        for kind in ("rejected", "cancelled"):
            listed = [(n, rid) for n, s in enumerate(steps) for rid in getattr(s, kind)]
            assert len(listed) == run["summary"][kind]
            for n, rid in listed:
                when = status[rid]["statusMs"]
                assert steps[n].end_ms >= when - 1e-9
                assert n == 0 or steps[n - 1].end_ms < when - 1e-9
    assert any(s.cancelled for s in model.replay(paged_burst).steps)


def test_preemptions_are_shown(paged_burst):
    steps = model.replay(paged_burst).steps
    assert sum(len(s.preempt) for s in steps) == paged_burst["summary"]["recomputes"] > 0


def _signature(event: dict) -> tuple:
    chunks = tuple((c["id"], c["fromToken"], c["tokens"]) for c in event["prefill"])
    return chunks, frozenset(event["decode"]), tuple(event.get("preempt", ()))


def test_first_difference_is_the_first_differing_batch(paged_burst, budgeted_burst):
    mine, other = model.replay(budgeted_burst), model.replay(paged_burst)
    found = diff.first_difference(mine, other)
    pairs = zip(budgeted_burst["events"], paged_burst["events"], strict=False)
    k = next(n for n, (a, b) in enumerate(pairs) if _signature(a) != _signature(b))
    assert found.step == k
    assert found.en.startswith(f"step {k}: ") and found.zh.startswith(f"第 {k} 步：")
    a, b = budgeted_burst["events"][k], paged_burst["events"][k]
    named = {c["id"] for c in a["prefill"] + b["prefill"]} ^ set(a["decode"]) ^ set(b["decode"])
    assert named and any(rid in found.en for rid in named)
    assert diff.first_difference(mine, model.replay(budgeted_burst)) is None


def test_first_difference_from_a_two_policy_pair():
    fcfs, chunked = run_ref("mixed", "fcfs"), run_ref("mixed", "chunked", chunk=2)
    found = diff.first_difference(model.replay(fcfs), model.replay(chunked))
    k = next(
        n
        for n, (a, b) in enumerate(zip(fcfs["events"], chunked["events"], strict=False))
        if _signature(a) != _signature(b)
    )
    assert found.step == k and "yours" in found.en and "the reference" in found.en


EXPECTED08 = EXPECTED07.parent.parent.parent / "unit08/tests/expected"


def _snapshot_case(case: str):
    """(your run, the snapshot of your policy, a snapshot of another policy)."""
    if case == "unit07":
        doc, mine = json.loads((EXPECTED07 / "mixed.json").read_text()), run_ref("mixed", "fcfs")
        ours, theirs = "fcfs", "chunked"
    else:  # zero-time prefill steps: several steps end at one time
        doc = json.loads((EXPECTED08 / "figure-31-1.json").read_text())
        mine = run08("static-vs-continuous", "continuous", device("round-10ms"))
        ours, theirs = "continuous", "static"
    snapshots = model.snapshots_of(doc, Path("expected.json"))
    pick = lambda name: model.pick(snapshots, name, Path("expected.json"))  # noqa: E731
    return model.replay(mine), pick(ours), pick(theirs)


@pytest.mark.parametrize("case", ["unit07", "unit08"])
def test_against_the_public_snapshot(case):
    mine, same, other = _snapshot_case(case)
    assert diff.first_difference(mine, same) is None
    found = diff.first_difference(mine, other)
    # the first token (in time order) where they part, computed from the two timelines
    times = mine.token_times()
    ours = sorted((t, lane.id) for n, lane in enumerate(mine.lanes) for t in times[n])
    ref = sorted((t, rid) for rid, ts in other.token_times_ms.items() for t in ts)
    first = next((a, b) for a, b in zip([*ours, None], [*ref, None], strict=False) if a != b)
    when = min(x[0] for x in first if x is not None)
    assert f"{when:.2f} ms" in found.en
    named = {x[1] for x in first if x is not None and x[0] == when}
    assert any(rid in found.en for rid in named)
    step = mine.steps[found.step]
    assert abs(step.end_ms - when) < 1e-9 or step.end_ms == min(
        s.end_ms for s in mine.steps if s.emits and s.end_ms >= when - 1e-9
    )


def test_page_embeds_every_step_and_lane(paged_burst, budgeted_burst):
    picture = model.replay(paged_burst)
    found = diff.first_difference(picture, model.replay(budgeted_burst))
    text = page.render(picture, "burst", found, "other.json")
    assert text.startswith("<!DOCTYPE html>") and 'lang="zh-CN"' in text
    for label in ("TTFT", "ITL", "prefill", "decode", "队列长度", "KV 页", "抢占", "拒绝", "取消"):
        assert label in text
    assert found.zh in text
    raw = text.split('<script type="application/json" id="run-data">')[1].split("</script>")[0]
    data = json.loads(raw)
    assert data["n"] == len(picture.steps) and len(data["ids"]) == len(picture.lanes)
    ends = [t / 1000 for t in page.from_run_lengths(data["t1"])]
    assert ends == pytest.approx([s.end_ms for s in picture.steps], abs=1e-3)
    assert page.from_run_lengths(data["kv"]) == [s.kv_pages for s in picture.steps]
    assert page.from_run_lengths(data["q"]) == [s.queue for s in picture.steps]
    starts = dict(data["idle"])
    for n, step in enumerate(picture.steps):
        start = starts.get(n, round(picture.steps[n - 1].end_ms * 1000) if n else 0) / 1000
        assert start == pytest.approx(step.start_ms, abs=1e-3)
    assert data["diff"]["step"] == found.step and data["pool"] == 256
    assert sum(1 for _ in data["pe"]) == paged_burst["summary"]["recomputes"]
    assert "src=" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")


def test_decode_deltas_rebuild_every_decode_set(paged_burst):
    """The page stores decode lists as changes; replaying them gives each step's set back."""
    picture = model.replay(paged_burst)
    data = page.page_data(picture, None)
    ins, outs = {}, {}
    for n, i in data["din"]:
        ins.setdefault(n, []).append(i)
    for n, i in data["dout"]:
        outs.setdefault(n, set()).add(i)
    counts = page.from_run_lengths(data["nd"])
    kept: list[int] = []
    for n, step in enumerate(picture.steps):
        kept = [i for i in kept if i not in outs.get(n, set())] + ins.get(n, [])
        shown = [data["ids"][i] for i in kept] if counts[n] else []
        assert sorted(shown) == sorted(step.decode)


def test_chrome_trace_has_each_step_and_request(paged_burst):
    picture = model.replay(paged_burst)
    doc = json.loads(json.dumps(chrome.trace_events(picture)))
    events = doc["traceEvents"]
    steps = [e for e in events if e["ph"] == "X" and e["pid"] == chrome.DEVICE]
    assert all(e["dur"] >= 0 for e in steps) and len(steps) < len(picture.steps)
    covered = sum(
        int(str(e["args"]["step"]).split("..")[-1]) - int(str(e["args"]["step"]).split("..")[0]) + 1
        for e in steps
    )
    assert covered == len(picture.steps)
    busy = sum(s.end_ms - s.start_ms for s in picture.steps) * 1000
    assert sum(e["dur"] for e in steps) == pytest.approx(busy, rel=1e-6)
    threads = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {lane.id for lane in picture.lanes} <= threads
    instants = [e["name"] for e in events if e["ph"] == "i"]
    assert instants.count("preempted") == paged_burst["summary"]["recomputes"]
    assert instants.count("cancelled") == paged_burst["summary"]["cancelled"]


def test_cli_writes_page_and_trace(tmp_path, paged_burst, budgeted_burst, capsys):
    mine = write_doc(tmp_path / "mine.json", budgeted_burst)
    other = write_doc(tmp_path / "other.json", paged_burst)
    args = [str(mine), "--against", str(other), "--format", "chrome-trace"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "first difference: step " in out
    assert (tmp_path / "mine.html").is_file() and (tmp_path / "mine.trace.json").is_file()


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "not a JSON file"),
        ('{"a": 1}', "not a run file"),
        ('{"runs": []}', "non-empty list"),
        ('{"runs": [{"policy": "x"}]}', "has no events"),
        ('{"runs": {"fcfs": {"tokenTimesMs": {}}}}', "pass it to --against"),
    ],
)
def test_bad_input_one_line_nothing_written(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "bad.html").exists()


def test_unknown_policy_is_named(tmp_path, capsys, budgeted_burst):
    run = write_doc(tmp_path / "r.json", budgeted_burst)
    assert main([str(run), "--policy", "nope"]) == 2
    assert "no run of policy 'nope' (it has: budgeted)" in capsys.readouterr().err


def test_lab_view_script_runs_with_python_alone(solved_lab, tmp_path):
    """In the lab folder, python3 -S (no site packages): simulate, then draw against the
    public snapshot; a compact run file is drawn too."""
    out = tmp_path / "mixed.json"
    sim = [sys.executable, "-S", "simulate.py", "--trace", "mixed", "--policy", "both"]
    subprocess.run([*sim, "--output", str(out)], cwd=solved_lab, check=True, capture_output=True)
    view = [sys.executable, "-S", "view.py", str(out), "--against", "tests/expected/mixed.json"]
    done = subprocess.run(view, cwd=solved_lab, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "no difference" in done.stdout and (tmp_path / "mixed.html").is_file()
    small = tmp_path / "compact.json"
    sim_compact = [*sim, "--format", "compact", "--output", str(small)]
    subprocess.run(sim_compact, cwd=solved_lab, check=True, capture_output=True)
    done = subprocess.run([*view[:3], str(small)], cwd=solved_lab, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    full = (tmp_path / "mixed.html").read_text()
    compact = (tmp_path / "compact.html").read_text()
    assert full.split('id="run-data">')[1] == compact.split('id="run-data">')[1]


def test_failing_public_test_prints_the_command_that_shows_it(tmp_path):
    lab = copy_lab(tmp_path / "lab", solution=True)
    policies = lab / "policies.py"
    text = policies.read_text()
    assert "min(chunk, head.remaining_prefill)" in text
    policies.write_text(text.replace("min(chunk, ", "min(chunk + 1, "))
    done = subprocess.run(
        [sys.executable, "-S", "run_tests.py"], cwd=lab, capture_output=True, text=True
    )
    assert done.returncode == 1
    command = "python3 view.py runs/failed/mixed-chunked.json --against tests/expected/mixed.json"
    assert command in done.stdout
    shown = subprocess.run(
        [sys.executable, "-S", *command.split()[1:]], cwd=lab, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert "first difference: step " in shown.stdout


def test_hint_without_a_writable_folder(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    line = show_command(run_ref("mixed", "fcfs"), "mixed", "fcfs", blocked)
    assert "could not save" in line


def test_infralab_view_is_the_same_command(tmp_path, capsys, paged_burst):
    from grader.cli.main import main as infralab

    run = write_doc(tmp_path / "r.json", paged_burst)
    assert infralab(["view", str(run), "--output", str(tmp_path / "staff.html")]) == 0
    assert main([str(run), "--output", str(tmp_path / "lab.html")]) == 0
    assert (tmp_path / "staff.html").read_text() == (tmp_path / "lab.html").read_text()
    assert infralab(["view", str(tmp_path / "missing.json")]) == 2
    assert "infralab view: error: " in capsys.readouterr().err


# -- a compact run is drawn from its columns, as its expansion would be ----------------------


def _fields(step: model.Step) -> tuple:
    return tuple(tuple(v) if isinstance(v, list | tuple) else v for v in astuple(step))


def _same_picture(compact: dict) -> model.Picture:
    """The picture of a compact entry, held equal to the picture of its expansion: columns,
    lanes, steps, the page and the Chrome trace."""
    fast, full = model.replay(compact), model.replay(expand_run(compact))
    assert fast.columns == full.columns
    assert fast.lanes == full.lanes
    assert [_fields(s) for s in fast.steps] == [_fields(s) for s in full.steps]
    assert page.render(fast, "t", None, None) == page.render(full, "t", None, None)
    assert chrome.trace_events(fast) == chrome.trace_events(full)
    return fast


def _compact_runs(unit, tmp_path: Path, *argv: str) -> list[dict]:
    out = tmp_path / "run.json"
    policies = reference.solution_policies(unit)
    argv = (*argv, "--format", "compact", "--output", str(out))
    assert lab_cli.main(list(argv), policies_module=policies, lab_dir=unit.lab_dir) == 0
    runs = json.loads(out.read_text(encoding="utf-8"))["runs"]
    assert all(compact.is_compact(run) for run in runs)
    return runs


@pytest.mark.parametrize(
    ("unit_id", "argv"),
    [
        ("unit07", ("--trace", "mixed", "--policy", "both")),
        ("unit07", ("--trace", "unseen", "--policy", "both")),
        (
            "unit08",
            ("--trace", "kv-pages", "--device-profile", "kv-64-pages.json", "--policy", "all"),
        ),
        ("unit08", ("--trace", "burst", "--device-profile", "pool-256.json", "--policy", "paged")),
        ("unit08", ("--trace", "tenants", "--policy", "all")),
        ("unit08", ("--trace", "unseen", "--policy", "all")),
    ],
)
def test_compact_runs_draw_as_their_expansion(tmp_path, unit_id, argv):
    unit = load_unit(unit_id)
    if "--device-profile" in argv:
        at = argv.index("--device-profile") + 1
        argv = (*argv[:at], str(unit.lab_dir / "devices" / argv[at]), *argv[at + 1 :])
    pictures = [_same_picture(run) for run in _compact_runs(unit, tmp_path, *argv)]
    if "burst" in argv:  # the cases the columns are built for: moves and early leavers
        assert any(p.columns.preempt for p in pictures)
        assert any(p.columns.cancelled or p.columns.rejected for p in pictures)


def test_compact_runs_with_swaps_and_partial_preemptions_draw_as_their_expansion():
    """A run that swaps (``swap_long`` around ``paged``), and seeded traces on tight pools,
    where ``paged`` preempts (running requests, and requests part-way through a prefill)."""
    paged = reference.solution_policies(load_unit("unit08")).paged
    rows = [{"id": f"r{i}", "arrivalMs": 5 * i, "inputTokens": 200, "outputTokens": 100}
            for i in range(4)]  # fmt: skip
    dev = DeviceProfile(
        prefill_ms_per_token=0.1, decode_batch_ms=20, kv_pages=64, swap_ms_per_page=0.05,
        swap_sync_ms=0.5, host_pages=64,
    )  # fmt: skip
    timeline = simulate(
        parse_trace({"requests": rows}), swap_long(lambda v: paged(v, 512), 0), dev, budget=512
    )
    run = build_run("paged", {"budget": 512}, dev, timeline, None, extended=True)
    picture = _same_picture(compact.compact_run(run, timeline))
    assert picture.columns.swap_out and picture.columns.swap_in
    rng, preempting = random.Random(3), 0
    for _ in range(40):
        rows = [
            {"id": f"R{i}", "arrivalMs": rng.randint(0, 40) / 4}
            | {"inputTokens": rng.randint(1, 60), "outputTokens": rng.randint(1, 30)}
            for i in range(rng.randint(2, 10))
        ]
        need = max(-(-(r["inputTokens"] + r["outputTokens"]) // 16) for r in rows)
        dev = DeviceProfile(decode_batch_ms=2.0, kv_pages=need + rng.randint(0, 3))
        budget = rng.randint(4, 64)
        try:
            timeline = simulate(
                parse_trace({"requests": rows}), lambda v, b=budget: paged(v, b), dev, budget=budget
            )
        except PolicyError:
            continue
        run = build_run("paged", {"budget": budget}, dev, timeline, None, extended=True)
        entry = compact.compact_run(run, timeline)
        if entry is None:
            continue
        preempting += bool(_same_picture(entry).columns.preempt)
    assert preempting >= 5
