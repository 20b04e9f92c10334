"""What the nbgrader round trip submits for each unit: a correct student and a wrong one.

The correct student ("alice") hands in the reference files and the model answers. The wrong
one ("bob") hands in a buggy editable file and answer cells typed as numbers taken from the
trusted answer keys, with a few numbers changed; ``wrong_cells`` are the test cells that check
exactly those numbers, so bob loses their points and part of the policy cell's, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.course.nbcheck import answer_key
from grader.units import Unit

# Unit 07: a chunked policy whose prefill chunks go first whenever a prompt waits, so a running
# request gets no decode batch in between (the lesson's head-of-line stall, chunked).
UNIT07_POLICIES = """\
from servesim import Batch


def fcfs(view):
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view, chunk):
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
    return Batch.decode_of(view.running)
"""

# Unit 08: the reference file with static batching that lets newcomers join a running group.
UNIT08_STATIC_BUG = """

def static(view):  # the bug: a running group takes newcomers, as continuous batching does
    return continuous(view)
"""


@dataclass(frozen=True)
class Plan:
    wrong_files: Callable[[Unit], dict[str, str]]  # editable file -> bob's text
    literal_answers: Callable[[Unit], dict[str, str]]  # answer cell grade id -> bob's source
    wrong_cells: frozenset[str]  # the test cells checking bob's changed numbers


def _unit07_answers(unit: Unit) -> dict[str, str]:
    mixed = answer_key(unit, "mixed")
    mixed["times"]["chunked"]["S"]["first"] += 1.0
    prefill = answer_key(unit, "prefill-only")
    prefill["submissions"]["chunked"] -= 1
    unseen = answer_key(unit, "unseen")
    return {
        "d1_answer": f"d1_times = {mixed['times']!r}\nd1_a_max_itl = {mixed['aMaxItl']!r}",
        "d2_answer": f"d2_outputs = {prefill!r}",
        "d3_answer": f"d3_verified = {unseen!r}",
    }


def _unit08_answers(unit: Unit) -> dict[str, str]:
    goodput = answer_key(unit, "goodput")
    goodput["paged"]["qualifying"] += 1
    protocol = answer_key(unit, "protocol")
    sweep = answer_key(unit, "sweep")
    wrong = [t for t in sweep["loose"]["points"] if t != sweep["loose"]["cheapest"]]
    sweep["loose"]["cheapest"] = wrong[0]  # named a tier that the runs do not make cheapest
    return {
        "d1_answer": f"d1 = {goodput!r}",
        "d2_rate_answer": f"d2_rate = {protocol['rate']!r}",
        "d2_answer": (
            f"d2_loops = {protocol['loops']!r}\nd2_open_above = {protocol['open_above_p99']!r}\n"
            f"d2_little = {protocol['little']!r}"
        ),
        "d3_answer": f"d3 = {sweep!r}",
    }


def _unit08_files(unit: Unit) -> dict[str, str]:
    policies = (unit.solutions_dir / "policies.py").read_text(encoding="utf-8")
    return {"policies.py": policies + UNIT08_STATIC_BUG}


def _unit09_answers(unit: Unit) -> dict[str, str]:
    fill = answer_key(unit, "fill")
    fill["pause_s"] = fill["fill_s_formula"]  # the closed form typed in, not the run's pause
    evidence = answer_key(unit, "evidence")
    evidence["denominators"]["waiting_share"] = "requests submitted"  # the wrong population
    diagnosis = answer_key(unit, "diagnosis")
    return {
        "d1_answer": f"d1 = {fill!r}",
        "d2_answer": f"d2 = {evidence['figures']!r}",
        "d2_plan_answer": (
            f"d2_plan = {evidence['plan']!r}\nd2_denominators = {evidence['denominators']!r}"
        ),
        "d3_answer": f"d3 = {diagnosis['causes']!r}\nd3_after = {diagnosis['after']!r}",
    }


def _unit09_files(unit: Unit) -> dict[str, str]:
    """The reference policies.py with a mutant over prefix_admit: it skips a waiting request
    whose pages do not fit and starts later ones, where vLLM's FCFS walk stops."""
    policies = (unit.solutions_dir / "policies.py").read_text(encoding="utf-8")
    mutant = (unit.unit_dir / "mutants" / "admit_overtakes.py").read_text(encoding="utf-8")
    return {"policies.py": policies + "\n\n" + mutant}


PLANS = {
    "unit07": Plan(
        lambda unit: {"policies.py": UNIT07_POLICIES},
        _unit07_answers,
        frozenset({"d1_chunked", "d2_outputs"}),
    ),
    "unit08": Plan(_unit08_files, _unit08_answers, frozenset({"d1_counts", "d3_loose"})),
    "unit09": Plan(_unit09_files, _unit09_answers, frozenset({"d1_fill", "d2_plan"})),
}
