"""The lab's exercises.py, run as a student runs it (python3 alone), against the textbook's
worked answers to exercises 31.3 and 31.4, against section 31.6's worked example (key swap)
and against counts made here."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from u08tools import UNIT08

from grader import labfolder


def exercises(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-I", "exercises.py", *args],
        cwd=labfolder.built(UNIT08),
        capture_output=True,
        text=True,
        timeout=60,
    )


def numbers(*args: str) -> dict:
    done = exercises(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_exercise_31_3_gives_the_textbook_utilisation():
    """Prompts 64, 64, 256: linear 1/2, squared attention 3/8 (the chapter's answer)."""
    r = numbers("31.3")
    assert (r["lengths"], r["linear"], r["attention"]) == ([64, 64, 256], [1, 2], [3, 8])
    assert numbers("31.3", "--lengths", "10", "30")["attention"] == [5, 9]  # (100 + 900) / 1800
    text = exercises("31.3").stdout
    assert "= 1/2" in text and "= 3/8" in text


@pytest.mark.parametrize(("q", "s", "split"), [(256, 257, 100), (7, 0, 3), (2, 5, 1)])
def test_exercise_31_4_pairs_are_conserved_and_history_is_reread(q, s, split):
    r = numbers("31.4", "--new", str(q), "--cached", str(s), "--split", str(split))
    direct = sum(s + r for r in range(1, q + 1))  # query r sees s cached keys and r new ones
    assert r["counted"] == r["formula"] == direct == q * s + q * (q + 1) // 2
    assert sum(r["splitPairs"]) == direct
    for row in r["engine"]:
        assert sum(row["chunks"]) == q
        assert row["pairs"] == direct  # the engine charges the same pairs for any chunking
        starts = [s + sum(row["chunks"][:k]) for k in range(len(row["chunks"]))]
        assert row["cachedReads"] == sum(starts)  # each chunk reads everything before it


def test_exercise_31_4_default_numbers_and_table():
    text = exercises("31.4").stdout
    assert "98688" in text and "30750" in text and "67938" in text
    assert "16 x 16" in text and "6032" in text


def closed_form(tokens: int, page_tokens: int) -> tuple[float, float]:
    """Section 31.6: recompute C_r = n / (20,000 tokens/s); swap 2m / b + C_s with m the bytes
    of the pages holding n tokens (64 KiB each token), b = 25 GB/s, C_s = 2 ms; in ms."""
    moved = math.ceil(tokens / page_tokens) * page_tokens * 64 * 1024
    return 1000 * tokens / 20_000, 1000 * 2 * moved / 25e9 + 2.0


@pytest.mark.parametrize(("page_tokens", "crossover"), [(1, 45), (16, 46)])
def test_exercise_31_6_runs_match_the_closed_form(page_tokens, crossover):
    """Each run's preemption cost is C_r or 2m/b + C_s; the crossover measured from the runs
    is the shortest length the closed form favours swap at (45: the chapter's answer)."""
    lengths = [1, 16, 44, 45, 46, 47, 64, 1024]
    r = numbers("swap", "--page-tokens", str(page_tokens), "--lengths", *map(str, lengths))
    assert [row["tokens"] for row in r["rows"]] == lengths
    for row in r["rows"]:
        recompute, swap = closed_form(row["tokens"], page_tokens)
        assert row["recomputeMs"] == pytest.approx(recompute, abs=1e-9)
        assert row["swapMs"] == pytest.approx(swap, abs=1e-9)
        assert row["pages"] == math.ceil(row["tokens"] / page_tokens)
        assert row["recomputeRunMs"] - row["baselineMs"] == row["recomputeMs"]
    shortest = next(
        n for n in range(1, 5000) if closed_form(n, page_tokens)[1] < closed_form(n, page_tokens)[0]
    )
    assert r["crossover"] == shortest == crossover
    text = exercises("swap", "--page-tokens", str(page_tokens)).stdout
    assert f"crossover: {crossover} tokens" in text


def test_exercise_31_6_without_a_crossover():
    """Up to 40 tokens swap never wins: the command says so instead of inventing a length."""
    r = numbers("swap", "--up-to", "40", "--lengths", "8")
    assert r["crossover"] is None and r["searchedUpTo"] == 40
    assert (
        "swap is never the shorter run up to 40 tokens" in exercises("swap", "--up-to", "40").stdout
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["31.3", "--lengths", "0", "4"], "must be >= 1, got 0"),
        (["31.4", "--new", "4", "--split", "4"], "--split must be below --new"),
        (["31.4", "--cached", "x"], "not an integer: 'x'"),
        (["swap", "--page-tokens", "0"], "must be >= 1, got 0"),
        (["31.99"], "give one of 31.2, 31.3, 31.4, 31.5, 31.6, 31.7, 31.9, swap"),
    ],
)
def test_bad_input_is_one_error(args, message):
    done = exercises(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and "Traceback" not in done.stderr
