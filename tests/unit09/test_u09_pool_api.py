"""The pool API the unit 09 handout lists (``servesim.view.POOL_API``) is enough for every
reference policy: each runs, on every public trace and snapshot device, against a pool that
refuses every other name, and its run is the one it makes on the engine's own pool."""

from __future__ import annotations

import re

import pytest
from servesim import SchedulerView
from servesim.view import POOL_API

from grader import reference
from grader.course import starter
from grader.units import load_unit

UNIT09 = load_unit("unit09")


class OutsideApi(Exception):
    """A policy used a name of the pool that the handout does not list."""


class StrictPool:
    """``pool`` behind the listed names only; ``used`` collects the names read."""

    def __init__(self, pool, used: set):
        object.__setattr__(self, "_pool", pool)
        object.__setattr__(self, "_used", used)

    def __getattr__(self, name):
        if name not in POOL_API:
            raise OutsideApi(f"the policy reads pool.{name}, which the handout does not list")
        self._used.add(name)
        if name == "copy":  # a copy is refused the same way
            return lambda: StrictPool(self._pool.copy(), self._used)
        return getattr(self._pool, name)

    def __setattr__(self, name, value):
        raise OutsideApi(f"the policy sets pool.{name}")


def strict(function, used: set):
    """``function`` given a view whose pool is a ``StrictPool``."""

    def policy(view, **params):
        handed = object.__new__(SchedulerView)
        pool = None if view.pool is None else StrictPool(view.pool, used)
        handed.__dict__.update(view.__dict__, pool=pool)
        return function(handed, **params)

    return policy


def _cases():
    specs = [{"id": t, "trace": t} for t in UNIT09.public_traces]
    specs += [s for s in starter.snapshot_specs(UNIT09) if s.keys() != {"id", "trace"}]
    for spec in specs:
        for policy in UNIT09.policies:
            if "policies" not in spec or policy["name"] in spec["policies"]:
                yield pytest.param(spec, policy, id=f"{spec['id']}-{policy['name']}")


def _run(spec, policy):
    params = {name: meta["default"] for name, meta in policy["params"].items()}
    device = starter._snapshot_device(UNIT09, spec)
    trace = reference.load_trace(UNIT09, spec["trace"])
    return reference.run_reference(UNIT09, trace, policy["name"], params, device)


@pytest.mark.parametrize("spec,policy", list(_cases()))
def test_reference_policy_needs_only_the_listed_pool_api(spec, policy, monkeypatch):
    solution = reference.solution_policies(UNIT09)
    own = _run(spec, policy)
    function = getattr(solution, policy["function"])
    monkeypatch.setattr(solution, policy["function"], strict(function, set()))
    assert _run(spec, policy) == own


def test_the_strict_pool_is_used_and_refuses_the_rest():
    """The prefix policies read the pool through the proxy (prefix_admit its reference counts
    of hit pages), and a name outside the list is refused."""
    solution = reference.solution_policies(UNIT09)
    for name in ("prefix_paged", "prefix_admit"):
        used: set = set()
        policy = next(p for p in UNIT09.policies if p["name"] == name)
        function = getattr(solution, policy["function"])
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(solution, policy["function"], strict(function, used))
            _run({"id": "shared-prefix", "trace": "shared-prefix"}, policy)
        assert {"copy", "free", "hit_tokens", "tables", "apply_step"} <= used, used
    assert "hit_refs" in used
    with pytest.raises(OutsideApi, match=r"pool\.page,"):
        StrictPool(object(), set()).page  # noqa: B018


def test_the_handout_lists_the_pool_api():
    """The handout's pool API section names exactly ``POOL_API``."""
    text = (UNIT09.lab_dir / "README.md").read_text(encoding="utf-8")
    section = text.split("<!-- pool api -->")
    assert len(section) == 3, "the handout has no pool API section between <!-- pool api --> marks"
    listed = set(re.findall(r"`pool\.(\w+)", section[1]))
    assert listed == set(POOL_API)
