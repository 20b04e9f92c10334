"""Calling the lab's policy functions: the selected policies with their parameters, each
wrapped so that a stub or a broken contract becomes a ``PolicyError`` naming the function."""

from __future__ import annotations

import importlib
import sys
from dataclasses import FrozenInstanceError

from . import contract
from .cliargs import every_policy
from .engine import PolicyError
from .labconfig import LabConfig
from .stubs import unfinished


def guarded(function, lab: LabConfig | None = None, check=None):
    """``function`` with a stub's ``NotImplementedError`` turned into a ``PolicyError`` that
    names the unfinished function (``servesim.stubs``); ``check(answer)`` (``servesim.contract``)
    turns an answer that breaks its contract into a ``PolicyError`` naming the function.

    The view refuses changes while ``function`` runs (``contract.GUARD``, unless the engine
    guards the call already): a refused change, or Python's own refusal of a write to the view
    (``contract.refused_write``), stops the run with the one sentence naming the function and
    what it changed, even when the function caught the error."""

    def call(*args, **kwargs):
        own_guard = contract.GUARD.who is None  # the engine guards a policy's view itself
        if own_guard:
            contract.GUARD.start(f"{function.__name__}()")
        broken = None
        try:
            answer = function(*args, **kwargs)
        except NotImplementedError as exc:
            raise PolicyError(unfinished(exc, lab)) from None
        except (FrozenInstanceError, TypeError, AttributeError) as exc:
            refused = contract.refused_write(f"{function.__name__}()", exc)
            if refused is None:
                raise
            raise PolicyError(refused) from None
        finally:
            if own_guard:
                broken = contract.GUARD.stop()
        if broken is not None:
            raise PolicyError(broken)
        if check is not None and (problem := check(answer)) is not None:
            raise PolicyError(contract.sentence(f"{function.__name__}()", problem))
        return answer

    return call


def selected_policies(lab: LabConfig, policies_module, selected: str, args, overrides=None):
    """``(spec, params, policy)`` for each selected policy, in the lab's order.

    ``policy(view)`` calls the student's function with its parameters (``overrides`` first,
    e.g. a tier's budget); a stub that still raises ``NotImplementedError`` becomes a
    ``PolicyError`` that names the function.
    """
    overrides = overrides or {}
    for spec in lab.policies:
        if selected not in (spec.name, every_policy(lab)):
            continue
        params = {name: overrides.get(name, getattr(args, name)) for name in spec.params}
        function = guarded(getattr(policies_module, spec.function), lab)

        def policy(view, function=function, params=params):
            return function(view, **params)

        yield spec, params, policy


def admit_hook(spec, policies_module, lab: LabConfig | None = None):
    """The policy's admission function (unit.yaml ``admit:``), or None."""
    if not spec.admit:
        return None
    return guarded(getattr(policies_module, spec.admit), lab, contract.admit_problem)


def import_policies(lab: LabConfig):
    """The lab folder's own ``policies.py`` (the student's file)."""
    sys.path.insert(0, str(lab.folder))
    return importlib.import_module("policies")
