"""The worked numbers of textbook chapter 31, computed rather than typed.

Site plug-in of unit 07's notes page (``chapter31.html``, see docs/units.md "Site"): the build
loads this file by path and calls ``chapter_context(unit)``. Inputs are the chapter's example
parameters (lengths, rates, sizes); every result on the page comes out of these functions.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from servesim import rules

from grader import labfolder
from grader.sitebuild.claims import BuildError
from grader.sitebuild.plugins import load_module
from grader.units import load_unit

_HERE = Path(__file__).resolve().parent
rounds = load_module(_HERE / "chapter31_rounds.py")
queues = load_module(_HERE / "chapter31_queues.py")
fair = load_module(_HERE / "chapter31_fair.py")

KIB = 1024
MIB = 1024 * KIB


def padding_utilisation(lengths: list[int]) -> tuple[Fraction, Fraction]:
    """(linear, attention) length utilisation when a batch is padded to its longest prompt."""
    n, longest = len(lengths), max(lengths)
    linear = Fraction(sum(lengths), n * longest)
    attention = Fraction(sum(p * p for p in lengths), n * longest * longest)
    return linear, attention


def attention_pairs(new: int, cached: int) -> int:
    """Causal key-query pairs for ``new`` positions after ``cached`` ones, counted one by one."""
    return sum(cached + r for r in range(1, new + 1))


def lab_exercise(name: str, *options: str) -> dict:
    """What ``python3 exercises.py NAME [OPTIONS]`` prints in the unit 08 lab folder (its
    ``--json`` form), run as a student runs it; the page quotes that command and checks its
    numbers."""
    lab = labfolder.built(load_unit("unit08"))
    done = subprocess.run(
        [sys.executable, "exercises.py", name, *options, "--json"],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise BuildError(f"exercises.py {name} in {lab.name}: {done.stderr.strip()}")
    result = json.loads(done.stdout)
    for key in ("linear", "attention"):
        if key in result:
            result[key] = Fraction(*result[key])
    return result


def pages(lengths: list[int], page_tokens: int) -> int:
    return sum(math.ceil(length / page_tokens) for length in lengths)


@dataclass(frozen=True)
class KvExample:
    bytes_per_token: int = 64 * KIB
    page_tokens: int = 16
    capacity_bytes: int = 64 * MIB
    active: tuple[int, ...] = (257, 255)
    new_chunk: int = 256
    declared_max: int = 1024

    @property
    def page_bytes(self) -> int:
        return self.bytes_per_token * self.page_tokens

    @property
    def capacity_pages(self) -> int:
        return self.capacity_bytes // self.page_bytes

    @property
    def now(self) -> int:
        return pages(list(self.active), self.page_tokens)

    @property
    def after_decode(self) -> int:
        return pages([n + 1 for n in self.active], self.page_tokens)

    @property
    def with_chunk(self) -> int:
        return self.after_decode + pages([self.new_chunk], self.page_tokens)

    @property
    def with_declared_max(self) -> int:
        return self.now + pages([self.declared_max], self.page_tokens)

    def after_steps(self, steps: int) -> int:
        return pages([n + steps for n in self.active], self.page_tokens)


def mm1_mean_s(lam: float, mu: float) -> float:
    """Mean sojourn time 1 / (mu - lambda) of M/M/1, formula 31.10."""
    if lam >= mu:
        raise ValueError("M/M/1 needs lambda < mu")
    return 1 / (mu - lam)


def mm1_quantile_s(lam: float, mu: float, q: float) -> float:
    """Quantile of the sojourn time, which is exponential with rate mu - lambda."""
    return -math.log(1 - q) / (mu - lam)


def _finish_times(remaining: list[int], slots: int, round_ms, refill: bool) -> list[int]:
    """Completion time of each request in a decode-only batch with ``slots`` places.

    Static batching (``refill=False``) starts a new batch only when every member has finished;
    continuous batching refills an empty place at the next round. ``round_ms`` is one round's
    time, or a tuple of times indexed by the number of sequences in the round minus one
    (finished members take no part in later rounds).
    """
    left = list(remaining)
    done: list[int | None] = [None] * len(left)
    queue = list(range(len(left)))
    active: list[int] = []
    clock = 0
    while queue or active:
        if refill or not active:
            while queue and len(active) < slots:
                active.append(queue.pop(0))
        clock += round_ms if isinstance(round_ms, int) else round_ms[len(active) - 1]
        for i in active:
            left[i] -= 1
            if left[i] == 0:
                done[i] = clock
        active = [i for i in active if left[i] > 0]
    return [t for t in done if t is not None]


def batching_example(remaining=(4, 1, 1), slots=2, round_ms=10) -> dict:
    """Figure 31.1's construction; exercise 31.2 passes ``round_ms=(6, 10)``."""
    static = _finish_times(list(remaining), slots, round_ms, refill=False)
    continuous = _finish_times(list(remaining), slots, round_ms, refill=True)
    return {
        "remaining": list(remaining),
        "static": static,
        "continuous": continuous,
        "static_mean": Fraction(sum(static), len(static)),
        "continuous_mean": Fraction(sum(continuous), len(continuous)),
    }


def goodput_example(submitted=1000, rejected=100, failed=50, meeting=700, window_s=100) -> dict:
    succeeded = submitted - rejected - failed
    return {
        "submitted": submitted,
        "rejected": rejected,
        "failed": failed,
        "succeeded": succeeded,
        "meeting": meeting,
        "window_s": window_s,
        "offered_rate": submitted / window_s,
        "success_rate": succeeded / window_s,
        "goodput": meeting / window_s,
        "share_of_succeeded": Fraction(meeting, succeeded),
        "share_of_submitted": Fraction(meeting, submitted),
    }


def chapter_numbers() -> dict:
    """Everything the chapter-31 notes page shows, keyed by example."""
    lengths = [64, 64, 256]
    linear, attention = padding_utilisation(lengths)
    kv = KvExample()
    pairs_q, pairs_s = 256, 257
    split = 100
    mm1 = [
        queues.mm1_row(lam, 100.0) | {"direct_p99_ms": 1000 * mm1_quantile_s(lam, 100.0, 0.99)}
        for lam in (80.0, 95.0)
    ]
    first_token_s, last_token_s, tokens = 0.3, 0.9, 31
    return {
        "padding": {"lengths": lengths, "linear": linear, "attention": attention},
        "pairs": {
            "q": pairs_q,
            "s": pairs_s,
            "counted": attention_pairs(pairs_q, pairs_s),
            "formula": rules.attention_pairs(pairs_q, pairs_s),
            "split": split,
            "split_sum": attention_pairs(split, pairs_s)
            + attention_pairs(pairs_q - split, pairs_s + split),
        },
        "kv": kv,
        "mm1": mm1,
        "little": {"throughput": 20, "sojourn_s": 0.4, "in_system": 20 * 0.4},
        "batching": batching_example(),
        "exercise_31_2": batching_example(round_ms=(6, 10)),
        "goodput": goodput_example(),
        "exercise_31_1": {
            "ttft_s": first_token_s,
            "tpot_s": (last_token_s - first_token_s) / (tokens - 1),
            "tokens": tokens,
        },
    }


def later_sections() -> dict:
    """The numbers of 31.3 (priority, estimator) to 31.7 and the exercises that build on them."""
    return {
        "estimator": rounds.estimator_example(),
        "priority": rounds.priority_example(),
        "area": queues.area_example(),
        "transform": {
            "terms": 2000,
            "points": [
                {"z": z, "pair": queues.mm1_transform(80.0, 100.0, z, terms=2000)}
                for z in (5.0, 30.0)
            ],
        },
        "admission": queues.admission_example(),
        "union": queues.union_bound(),
        "buffer": {
            "produce": 12,
            "consume": 4,
            "capacity": 64,
            "fill_s": queues.buffer_fill_s(64, 12, 4),
            "never": queues.buffer_fill_s(64, 4, 4),
        },
        "burst": queues.burst_example(),
        "units": fair.fairness_units(),
        "deficit": fair.deficit_example(),
        "preempt": fair.preempt_example(),
        "weighted": fair.weighted_stats(),
        "stall": fair.stall_example(),
        "loop": fair.loop_example(),
    }


def chapter_context(unit) -> dict:
    """Template variables of chapter31.html.j2: ``ch``, every worked example, and ``lab``, what
    the unit 08 lab's exercise command prints for the exercises that have one."""
    lab = {name: lab_exercise(name) for name in ("31.3", "31.4", "swap")}
    lab["swap pages"] = lab_exercise("swap", "--page-tokens", "16", "--lengths", "16")
    return {"ch": chapter_numbers() | later_sections(), "lab": lab}
