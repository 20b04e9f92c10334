"""Test-only policies for the engine's property and differential tests (not unit 08's graded
policies, which live in solutions/unit08): a seeded random policy that uses every feature of a
step (mixed decode and prefill chunks, preemption, any order), and a scripted policy that
replays the batches of a recorded run."""

from __future__ import annotations

import random

from servesim import Batch, PrefillChunk


def random_policy(seed: int, preempt_rate: float = 0.1):
    """Random valid steps under the view's B, K and M, with rare preemptions.

    Decodes a random subset of the running sequences and adds chunks of random sizes for a
    random subset of the waiting ones, then drops members until the step fits. When nothing
    fits, it preempts every holder but the oldest and runs that one alone, which always fits
    (a request that could never fit the pool alone was rejected at arrival), so every run
    ends.
    """
    rng = random.Random(seed)

    def policy(view):
        holders = [s for s in (*view.running, *view.waiting) if s.holds_kv]
        preempt = []
        if holders and rng.random() < preempt_rate:
            preempt = [rng.choice(holders).id]
        decode = [s.id for s in view.running if s.id not in preempt and rng.random() < 0.8]
        chunks = [
            PrefillChunk(s.id, rng.randint(1, s.remaining_prefill))
            for s in view.waiting
            if s.id not in preempt and rng.random() < 0.5
        ]
        members = [*decode, *chunks]
        rng.shuffle(members)
        while members:
            batch = _batch(members, preempt)
            if view.fits(batch):
                return batch
            members.pop()
        return _fallback(view, holders)

    return policy


def _batch(members, preempt) -> Batch:
    decode = [m for m in members if isinstance(m, str)]
    chunks = [m for m in members if not isinstance(m, str)]
    return Batch(decode=decode, prefill=chunks, preempt=preempt)


def _fallback(view, holders) -> Batch:
    if not holders:
        head = view.waiting[0]
        return Batch(prefill=[PrefillChunk(head.id, 1)])
    keep = min(holders, key=lambda s: s.order)
    others = [s.id for s in holders if s is not keep]
    if keep.remaining_prefill and keep.prefilled:  # a partial prefill goes on
        return Batch(prefill=[PrefillChunk(keep.id, 1)], preempt=others)
    return Batch(decode=[keep.id], preempt=others)


def scripted(events):
    """A policy that returns the recorded batches in order (``Event.batch`` or run-file dicts)."""
    batches = iter(
        e.batch
        if hasattr(e, "batch")
        else Batch(
            decode=e["decode"],
            prefill=[PrefillChunk(c["id"], c["tokens"]) for c in e["prefill"]],
            preempt=e.get("preempt", ()),
        )
        for e in events
    )
    return lambda view: next(batches)
