"""Unit 09's varied public traces (unit.yaml ``variants.public``).

``slow_readers()`` (seed 909) is ``slow-readers``, streamed requests whose clients read
slowly, as the lab ships it (``starter/unit09/traces/``); ``slow_readers(seed=N)`` is a
student's variant of it, drawn by the staff trace generator (``grader.traces.tracegen``) from
the same spec with another seed.

``cancels``, ``shared-prefix`` and ``evict`` are constructions, listed request by request in
the shipped files. ``cancels()``, ``shared_prefix()`` and ``evict()`` give those files'
traces; with ``seed=N``, a student's variant: the same requests perturbed by the knobs their
``vary`` block draws (``grader.traces.perturb``, the same code that draws the hidden listed
traces again), so the cancels still land while waiting, prefilling and decoding, and the
system prompts and the document are still shared.

``ex31-10`` is exercise 31.10's one streamed request, which ``ex31_10.py`` and the notebook
run. ``ex31_10()`` gives the shipped file (the client reads 4 KiB/s, the chapter's rate);
with ``seed=N``, a student's variant: the same request with a read rate of their own.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import servesim

from grader.plugins import load_file
from grader.reference import solution_module
from grader.traces.errors import SpecError
from grader.traces.tracegen import trace_from_spec
from grader.units import load_unit
from grader.variants.drawn import draw_spec

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parents[1] / "starter" / "unit09" / "traces"
# What the builders read outside the lab folder (evict's ``recomputes``): the variant cache
# hashes them too (grader.variants.drawn.builder_inputs).
INPUTS = ("notebook/notebook_setup.py", "notebook/answer_keys.py")

SLOW_READERS = {
    "name": "slow-readers",
    "description": "Sixteen streamed requests on the lab device with a streaming buffer: nine of "
    "their clients read slower than the device writes, so their buffers fill and pause, and the "
    "five slowest are cancelled at the pause deadline.",
    "generate": {
        "count": 16,
        "idPrefix": "c",
        "arrivals": {"process": "poisson", "ratePerMs": 0.04},
        "inputTokens": {"dist": "uniform", "min": 60, "max": 240},
        "outputTokens": {"dist": "uniform", "min": 50, "max": 150},
        "readBytesPerS": {"dist": "choice", "values": [120, 1200, 1000000], "weights": [1, 2, 5]},
    },
}
VARIANT_DESCRIPTION = (
    "Sixteen streamed requests on the lab device with a streaming buffer: some of their clients "
    "read slower than the device writes, so their buffers fill and pause, and the slowest are "
    "cancelled at the pause deadline."
)


def slow_readers(seed: int = 909) -> dict:
    """The shipped trace (seed 909), else a variant drawn from ``seed`` (its counts of slow
    clients are the draw's, so the description does not name them)."""
    spec = json.loads(json.dumps(SLOW_READERS))
    spec["generate"]["seed"] = seed
    if seed != 909:
        spec["description"] = VARIANT_DESCRIPTION
    return trace_from_spec(spec, "labs/unit09/public_traces.py")


# The knobs a variant of a listed public trace draws (grader/traces/perturb.py); the ranges
# are the hidden constructions' (traces/unit09/specs/cancel-heavy.yaml).
_MOVES = {
    "arrivalScale": {"min": 0.85, "max": 1.15, "step": 0.01},
    "arrivalJitter": {"set": 0.15},
    "inputScale": {"min": 0.85, "max": 1.15, "step": 0.01},
    "outputScale": {"min": 0.85, "max": 1.15, "step": 0.01},
    "lengthJitter": {"set": 0.1},
}
# The public test (test_part1_cancel.py) counts ten cancelled requests. A cancel here only
# comes sooner (a factor of at most 0.99) and an output only grows (at least 1.05 x 0.95), so
# a request the fixed trace cancels is cancelled earlier in a longer life; with the hidden
# traces' ranges, 7 of 200 seeds let one complete first (tests/grader/test_variant_listed.py).
CANCELS_VARY = _MOVES | {
    "outputScale": {"min": 1.05, "max": 1.25, "step": 0.01},
    "lengthJitter": {"set": 0.05},
    "cancelScale": {"min": 0.7, "max": 0.9, "step": 0.05},
    "cancelJitter": {"set": 0.1},
    "idPrefix": {"values": ["c", "k", "x"]},
}
CANCELS_DESCRIPTION = "14 requests, two of three cancelled by their client soon after arrival"
SHARED_PREFIX_VARY = _MOVES | {
    "prefixScale": {"values": [0.75, 1.0, 1.25]},
    "regroupShare": {"min": 0.0, "max": 0.3, "step": 0.05},
    "idPrefix": {"values": ["s", "p", "h"]},
}
SHARED_PREFIX_DESCRIPTION = "16 requests; most share one of two system prompts, some a document too"


# evict: the three 80-token system prompts stay 80 tokens (the handout names them), each
# cancel only comes sooner and each output only grows, so its two cancels land in every draw
# (tests/grader/test_variant_listed.py, 200 draws).
EVICT_VARY = {
    key: CANCELS_VARY[key]
    for key in ("arrivalScale", "arrivalJitter", "inputScale", "outputScale", "lengthJitter")
} | {
    "cancelScale": CANCELS_VARY["cancelScale"],
    "cancelJitter": CANCELS_VARY["cancelJitter"],
    "regroupShare": {"min": 0.0, "max": 0.3, "step": 0.05},
    "idPrefix": {"values": ["e", "v", "w"]},
}
EVICT_DESCRIPTION = (
    "12 requests in three prefix groups of 80 tokens on a small pool: freed prefix pages are "
    "evicted, two clients cancel"
)


def cancels(seed: int | None = None) -> dict:
    """The shipped ``cancels`` (no seed), else a variant drawn from ``seed``."""
    return _listed("cancels", CANCELS_VARY, CANCELS_DESCRIPTION, seed)


def shared_prefix(seed: int | None = None) -> dict:
    """The shipped ``shared-prefix`` (no seed), else a variant drawn from ``seed``."""
    return _listed("shared-prefix", SHARED_PREFIX_VARY, SHARED_PREFIX_DESCRIPTION, seed)


def evict(seed: int | None = None) -> dict:
    """The shipped ``evict`` (no seed), else a variant drawn from ``seed``: the first of its
    draws on which the notebook's recompute run recomputes (``recomputes``); about one draw in
    seven does not, and is drawn again."""
    if seed is None:
        return _listed("evict", EVICT_VARY, EVICT_DESCRIPTION, seed)
    for draw in range(EVICT_DRAWS):
        doc = _listed("evict", EVICT_VARY, EVICT_DESCRIPTION, seed, draw)
        if recomputes(doc):
            return doc
    raise SpecError(f"evict: none of {EVICT_DRAWS} draws of seed {seed} recomputes a prompt")


EVICT_DRAWS = 16  # 28 of 200 first draws do not recompute: 16 in a row would be about 1e-14


def recomputes(doc: dict) -> bool:
    """Whether deliverable 2's recompute run (the answer key's ``recompute_run``) runs some
    prompt token twice on the trace ``doc``, as the reference ``measure.prefill_amplification``
    counts: the run 31.12 names for recompute must show one."""
    unit = load_unit("unit09")
    trace = servesim.parse_trace(doc, source="evict (variant)")
    run = load_file(HERE / "notebook" / "answer_keys.py").recompute_run(unit, trace)
    amplification = solution_module(unit, "measure.py").prefill_amplification(run)
    return amplification.num > amplification.den


def _listed(name: str, vary: dict, description: str, seed: int | None, draw: int = 0) -> dict:
    where = f"labs/unit09/public_traces.py:{name}"
    doc = json.loads((SHIPPED / f"{name}.json").read_text(encoding="utf-8"))
    if seed is None:
        return doc
    spec = {"name": name, "description": description, "requests": doc["requests"], "vary": vary}
    return trace_from_spec(draw_spec(spec, f"public:{seed}", where, draw), where)


# ex31_10.py's device writes 384-byte events every 31.25 ms (12 KiB/s) into a 64 KiB buffer
# with a 32 KiB low mark. A variant's client reads 2 to 5 KiB/s in steps of 0.25 KiB/s, never
# the chapter's 4 KiB/s (so the chapter's 8 s is nobody's answer). Every rate keeps the
# exercise's facts (tests/unit09/test_u09_ex31_10.py): above 5 KiB/s the 300 tokens would
# never fill the buffer, and the drain from full to the low mark (at least 32 KiB - 384 B
# over the read rate, 6.3 s at 5 KiB/s) outlasts ex31_10.py's 5 s pause deadline.
EX31_10_READ_RATES = tuple(quarter * 256 for quarter in range(8, 21) if quarter != 16)
KIB = 1024


def ex31_10_at(read_bytes_per_s: int) -> dict:
    """The ``ex31-10`` trace with its client reading ``read_bytes_per_s``."""
    doc = json.loads((SHIPPED / "ex31-10.json").read_text(encoding="utf-8"))
    (request,) = doc["requests"]
    request["readBytesPerS"] = read_bytes_per_s
    doc["description"] = ex31_10_description(read_bytes_per_s, request["outputTokens"])
    return doc


def ex31_10_description(read_bytes_per_s: int, output_tokens: int) -> str:
    return (
        f"Exercise 31.10's one streamed request: a one-token prompt and {output_tokens} output "
        f"tokens, read by its client at {read_bytes_per_s / KIB:g} KiB/s (ex31_10.py's device "
        "writes 12 KiB/s into a 64 KiB buffer)"
    )


def ex31_10(seed: int | None = None) -> dict:
    """The shipped ``ex31-10`` (no seed), else a variant: a read rate drawn from ``seed``
    out of ``EX31_10_READ_RATES``."""
    if seed is None:
        return json.loads((SHIPPED / "ex31-10.json").read_text(encoding="utf-8"))
    return ex31_10_at(random.Random(seed).choice(EX31_10_READ_RATES))


# The shipped files of the three constructions end without a newline; variants are written alike.
_NO_FINAL_NEWLINE = ("cancels", "shared-prefix", "evict")


def render(doc: dict) -> str:
    """The file text, as the shipped file is written."""
    end = "" if doc.get("name") in _NO_FINAL_NEWLINE else "\n"
    return json.dumps(doc, indent=1, ensure_ascii=False) + end


# tailruns.json: the numbers of exercise 31.13's situations (tailruns.py), which the notebook's
# deliverables 2 and 3 run. A variant draws each value out of these; the pattern's shift is
# never the course's 0, so no situation's requests are the course's (nobody's keys are the
# shipped ones), and the baseline's is another. Every drawable value keeps each situation's
# cause and what each follow-up does (tests/unit09/test_u09_tailruns_draws.py, all of them);
# a slow reader every third request, a baseline shift of 0, long prompts 950 ms or more apart,
# prompts of 5,000 or 7,000 tokens or a light load sparser than one every 400 ms broke some
# claim there.
TAILRUNS_SHIFTS = (1, 2, 3, 4)  # the pattern's; the baseline's is any other of these
TAILRUNS_DRAWS = {
    ("light", "everyMs"): (380, 390, 400),
    ("overload", "everyMs"): (34, 36, 38, 40, 42, 44, 46),
    ("long prompts", "everyMs"): (800, 850, 900),
    ("long prompts", "inputTokens"): (5500, 6000, 6500),
    ("slow clients", "every"): (4, 5),
    ("slow clients", "readBytesPerS"): (1300.0, 1400.0, 1500.0, 1600.0, 1700.0, 1800.0, 1900.0),
    ("pattern", "shift"): TAILRUNS_SHIFTS,
}
TAILRUNS_DESCRIPTION = "Exercise 31.13's situations (tailruns.py): this lab's own numbers"


def _lab_tailruns():
    return load_file(SHIPPED.parent / "tailruns.py")


def tailruns(seed: int | None = None) -> dict:
    """The shipped ``tailruns.json`` (no seed), else a variant: each value drawn from ``seed``
    out of ``TAILRUNS_DRAWS``, checked by the lab's own ``tailruns.parse_values``."""
    doc = json.loads((SHIPPED.parent / "tailruns.json").read_text(encoding="utf-8"))
    if seed is None:
        return doc
    rng = random.Random(seed)
    for (part, field), choices in TAILRUNS_DRAWS.items():
        doc[part][field] = rng.choice(choices)
    pattern = doc["pattern"]
    pattern["baselineShift"] = rng.choice([s for s in TAILRUNS_SHIFTS if s != pattern["shift"]])
    doc["description"] = TAILRUNS_DESCRIPTION
    return _lab_tailruns().parse_values(doc, "labs/unit09/public_traces.py:tailruns")
