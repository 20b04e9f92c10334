"""The unit 08 lab folder as shipped: generated files in step, red on stubs, green solved, from
python3 alone; the trace files are what their generator writes."""

import re

import pytest
from u08tools import UNIT08, copy_lab08, lab_python

from grader.course import starter
from grader.plugins import load_file
from grader.traces.errors import DataMissing
from grader.units import load_unit

unit08_traces = load_file(load_unit("unit08").unit_dir / "public_traces.py")


def test_starter_files_are_in_step_with_solutions_and_unit_yaml():
    stale = starter.stale_files(UNIT08)
    assert not stale, f"run `infralab starter sync --unit unit08`; stale: {stale}"


def test_stubs_name_every_function_and_hide_the_solutions():
    for name, functions in {
        "policies.py": ["static", "continuous", "budgeted", "paged", "fair", "admit", "challenge"],
        "measure.py": [
            "meets_slo",
            "goodput",
            "area_under_n",
            "clipped_residence",
            "tpot_means",
            "interval",
            "verdict",
            "steady_state",
            "replication",
        ],
    }.items():
        stub = (UNIT08.lab_dir / name).read_text(encoding="utf-8")
        assert "### BEGIN SOLUTION" not in stub
        for function in functions:
            assert f'raise NotImplementedError("{function}() is not implemented yet")' in stub


def test_public_traces_are_what_the_generator_writes():
    try:
        stale = unit08_traces.stale()
    except DataMissing as exc:
        pytest.skip(f"Azure trace not available: {exc}")
    assert not stale, f"run `python labs/unit08/public_traces.py`; stale: {stale}"


def test_public_tests_red_on_stubs_from_python3_alone(tmp_path):
    done = lab_python(copy_lab08(tmp_path / "lab", solution=False), "run_tests.py")
    assert done.returncode == 1, done.stdout + done.stderr
    for function in ("static", "continuous", "budgeted", "paged", "fair", "admit"):
        assert f"{function}() in policies.py is not implemented yet" in done.stdout
    for function in ("goodput", "meets_slo", "area_under_n", "tpot_means", "interval", "verdict"):
        assert f"{function}() in measure.py is not implemented yet" in done.stdout
    # the optional and challenge parts are not started: their tests skip, the rest fail
    assert re.search(r" failed, 0 passed, [1-9]\d* skipped$", done.stdout.splitlines()[-1])


def test_public_tests_green_with_solutions_from_python3_alone(tmp_path):
    done = lab_python(copy_lab08(tmp_path / "lab", solution=True), "run_tests.py")
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.endswith(" passed") and "failed" not in last


def test_runner_reports_a_first_divergence(tmp_path):
    lab = copy_lab08(tmp_path / "lab", solution=True)
    policies = lab / "policies.py"
    text = policies.read_text(encoding="utf-8")
    policies.write_text(
        text.replace("left = budget - len(decode)", "left = budget - 2 * len(decode)")
    )
    done = lab_python(lab, "run_tests.py", "-k", "budgeted_burst")
    assert done.returncode == 1
    assert "first difference: request b" in done.stdout and "expected" in done.stdout


def test_sweep_on_stubs_names_the_function_to_write(tmp_path):
    lab = copy_lab08(tmp_path / "lab", solution=False)
    done = lab_python(
        lab,
        *("sweep.py", "--protocol", "protocols/lesson.json", "--requests", "400"),
        *("--replications", "2", "--loads", "2", "--tiers", "tiers/small-paged.json"),
        *("--jobs", "1", "--out", "plots"),
    )
    assert done.returncode == 1
    assert "is not implemented yet" in done.stderr and not (lab / "plots").exists()


def test_handout_lifo_victim_numbers_are_the_runs():
    """The handout's walk through ``lifo-victim`` quotes a reference run; the same run the
    lesson's table shows (``lesson_constructions.lifo_victim``)."""
    constructions = load_file(UNIT08.unit_dir / "lesson_constructions.py")
    lifo = constructions.lifo_victim(constructions.Runs(UNIT08))
    step, runs, dev = lifo["step"], lifo["runs"], constructions.lab_device(UNIT08, "kv-64-pages")
    pages, cache = step["pages"], step["cache"]
    prompt, others = runs["paged"].req["L"]["inputTokens"], len(cache) - 1
    assert pages["A"] == pages["B"] and min(cache["A"], cache["B"]) > 256
    assert lifo["start"]["free"] == lifo["start"]["needs"] == dev.pages_for(prompt)
    finish = {policy: run.req["L"]["finishMs"] for policy, run in runs.items()}
    assert finish["budgeted"] < finish["paged"]
    # who is doing what when L arrives: A decodes, B's prompt is still prefilled in chunks
    events, arrival = runs["paged"].run["events"], runs["paged"].req["L"]["arrivalMs"]
    at = next(e for e in events if e["startMs"] <= arrival < e["endMs"])
    assert at["decode"] == ["A"] and [c["id"] for c in at["prefill"]] == ["B"]
    chunks = lifo["chunks"]["B"]
    first = next(e for e in events if any(c["id"] == "L" for c in e["prefill"]))
    together = {c["id"]: c["tokens"] for c in first["prefill"]}
    assert_handout_says(
        [
            f"L（提示 {prompt}）{arrival:g} ms 到达时，A 在 decode",
            f"B 的提示还在分块 prefill（{chunks[0][0]:.2f} ms 到 {chunks[-1][1]:.2f} ms，"
            f"分 {len(chunks)} 块）",
            f"B 的最后 {together['B']} 个提示 token 和 L 的前 {together['L']} 个同批",
            f"B 的首 token 在 {runs['paged'].req['B']['firstTokenMs']:.2f} ms",
            f"{lifo['start']['startMs']:.2f} ms 那一步",
            f"整段提示的 {lifo['start']['needs']} 页正好空着",
            f"每步 {lifo['budget'] - others} 个 token",
            f"{step['startMs']:.2f} ms 开始的那一步",
            f"各占 {pages['A']} 页，L 占 {pages['L']} 页，池子只剩 {step['free']} 页",
            f"放不下 L 下一个分块要的 {step['chunkPages']} 页",
            f"已经算好的 {cache['L']} 个提示 token",
            f"`recomputedTokens` = {runs['paged'].req['L']['recomputedTokens']}",
            f"在 {finish['budgeted']:.2f} ms 完成",
            f"`paged` 的 {finish['paged']:.2f} ms",
        ]
    )
    assert runs["paged"].req["L"]["recomputedTokens"] == cache["L"]


def test_handout_timed_numbers_are_the_runs():
    """The handout's budgeted vs timed comparison quotes the lesson's runs
    (``lesson_constructions.timed_vs_budgeted``), with the lab's default parameters."""
    constructions = load_file(UNIT08.unit_dir / "lesson_constructions.py")
    timed = constructions.timed_vs_budgeted(constructions.Runs(UNIT08))
    b, t, target = timed["rows"]["budgeted"], timed["rows"]["timed"], timed["target"]
    budget, share = timed["params"]["budgeted"]["budget"], timed["params"]["timed"]["share"]
    assert t["p99Itl"] <= target < b["p99Itl"] and t["over"] == 0
    assert_handout_says(
        [
            f"B = {budget}；目标 {target} ms、份额 {share}",
            f"`budgeted` 的 p99 ITL 是 {b['p99Itl']:.2f} ms",
            f"{b['steps']} 步里有 {b['over']} 步超过 {target} ms",
            f"`timed` 的 p99 ITL 是 {t['p99Itl']:.2f} ms",
            f"p99 TTFT 从 {b['p99Ttft'] / 1000:.2f} s 升到 {t['p99Ttft'] / 1000:.2f} s",
        ]
    )


def assert_handout_says(quoted: list[str]) -> None:
    """Each text is in the handout, compared without white space (it wraps lines anywhere)."""
    handout = "".join((UNIT08.lab_dir / "README.md").read_text(encoding="utf-8").split())
    for text in quoted:
        assert "".join(text.split()) in handout, f"the handout should say {text!r}"
