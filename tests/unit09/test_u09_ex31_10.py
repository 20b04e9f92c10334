"""Exercise 31.10's request (``traces/ex31-10.json``) and its variants: every read rate a
student can draw keeps what ``ex31_10.py``, the notebook and the lesson say about the run; the
shipped file is the builder's fixed trace; a broken file is one clear error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import servesim
from labtools import copy_lab

from grader.plugins import load_file
from grader.units import load_unit

UNIT09 = load_unit("unit09")
BUILDERS = load_file(UNIT09.unit_dir / "public_traces.py")
SHIPPED = UNIT09.lab_dir / "traces" / "ex31-10.json"


@pytest.fixture(scope="module")
def ex10():
    """The lab's ``ex31_10.py`` (it puts its folder on ``sys.path``: put back afterwards)."""
    path = list(sys.path)
    try:
        yield load_file(UNIT09.lab_dir / "ex31_10.py")
    finally:
        sys.path[:] = path


def facts(ex10, trace) -> dict:
    """What the exercise's prose claims about a run of ``trace``, each as a bool."""
    f = ex10.figures(trace)
    free, stall = f["no_deadline"], f["with_deadline"]
    pause, resume = (t / 1000 for t in free["pauses_ms"][0]) if free["pauses_ms"] else (None, None)
    # the engine pauses when one more event would not fit, and the client starts reading at
    # the first token (one step after arrival): early by less than those bytes' net fill time
    lead = ex10.DEVICE.stream_event_bytes + f["read_bytes_per_s"] * ex10.STEP_MS / 1000
    lead_s = lead / (f["produce_bytes_per_s"] - f["read_bytes_per_s"])
    return {
        "pauses": pause is not None,
        "pause before the fluid fill time, by under an event and a step's reads":
            pause is not None and 0 < f["fill_s"] - pause < lead_s,
        "resumes after the pause": resume is not None and resume > pause,
        "completes without a deadline": free["status"] == "completed",
        "cancelled at the deadline":
            (stall["status"], stall["cancel_reason"]) == ("cancelled", "stalled"),
        "cancelled stream incomplete": stall["tokens"] < stall["output_tokens"],
    }  # fmt: skip


@pytest.mark.parametrize("rate", BUILDERS.EX31_10_READ_RATES)
def test_every_read_rate_a_student_can_draw_keeps_the_exercises_facts(ex10, rate):
    doc = BUILDERS.ex31_10_at(rate)
    assert doc["requests"][0]["readBytesPerS"] == rate
    got = facts(ex10, servesim.parse_trace(doc, source=f"rate {rate}"))
    assert all(got.values()), got


def test_the_range_stops_where_the_facts_would_break(ex10):
    """A quarter KiB/s above the drawn range, 300 tokens never fill the buffer; the chapter's
    own 4 KiB/s is never drawn (its 8 s is nobody's answer)."""
    rates = BUILDERS.EX31_10_READ_RATES
    assert 4096 not in rates and min(rates) == 2048
    beyond = facts(ex10, servesim.parse_trace(BUILDERS.ex31_10_at(max(rates) + 256)))
    assert not beyond["pauses"]


def test_the_shipped_file_is_the_fixed_trace_and_seeds_draw_every_rate():
    assert BUILDERS.render(BUILDERS.ex31_10()).encode() == SHIPPED.read_bytes()
    assert BUILDERS.ex31_10_at(4096) == BUILDERS.ex31_10()  # the description has the rate
    drawn = [BUILDERS.ex31_10(seed=seed) for seed in range(200)]
    rates = {doc["requests"][0]["readBytesPerS"] for doc in drawn}
    assert rates == set(BUILDERS.EX31_10_READ_RATES)
    for doc in drawn:  # only the rate and the description that names it change
        fixed = BUILDERS.ex31_10_at(doc["requests"][0]["readBytesPerS"])
        assert doc == fixed


def test_the_shipped_run_is_the_chapters_example(ex10):
    f = ex10.figures()
    assert (f["read_bytes_per_s"], f["fill_s"]) == (4096, 8.0)
    assert f["no_deadline"]["pauses_ms"] == [[7968.75, 15937.5]]


def test_a_broken_trace_file_is_one_error_naming_it(tmp_path, ex10):
    path = tmp_path / "ex31-10.json"
    two = json.loads(SHIPPED.read_text(encoding="utf-8"))
    two["requests"].append(dict(two["requests"][0], id="other"))
    path.write_text(json.dumps(two), encoding="utf-8")
    with pytest.raises(servesim.TraceError, match="one request 'stream'"):
        ex10.load_trace(path)
    lab = copy_lab(tmp_path / "lab", False, UNIT09)
    (lab / "traces" / "ex31-10.json").write_text("{", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-S", "ex31_10.py"], cwd=lab, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("ex31_10.py: error: ") and done.stderr.count("\n") == 1
    assert "ex31-10.json: not valid JSON" in done.stderr
