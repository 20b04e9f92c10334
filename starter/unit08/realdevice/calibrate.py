"""Measure what submissions cost on the real device, over a grid of shapes.

Prefill: one chunk of ``L`` tokens on top of ``C`` positions already cached (the ``C`` are
prefilled first, untimed). Decode: one step of ``B`` requests that each hold ``c`` cached
positions. Every timed submission goes through ``RealDevice.execute``, so the samples carry the
batch and its context, exactly as a run's submissions do.
"""

from __future__ import annotations

from dataclasses import dataclass

from servesim import Batch, PrefillChunk

from .backend import RealDevice, Submission


@dataclass(frozen=True)
class Grid:
    chunk_lengths: tuple[int, ...]
    contexts: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    decode_contexts: tuple[int, ...]
    repeats: int = 3
    decode_steps: int = 3

    def pages_needed(self, page_tokens: int) -> int:
        """KV pages the largest setup holds at once (requests are freed between setups)."""
        pages = lambda tokens: -(-tokens // page_tokens)  # noqa: E731
        prefill = max(
            pages(length + context) for length in self.chunk_lengths for context in self.contexts
        )
        decode = max(
            size * pages(context + self.decode_steps + 1)
            for size in self.batch_sizes
            for context in self.decode_contexts
        )
        return max(prefill, decode)

    def to_json(self) -> dict:
        return {
            "chunkLengths": list(self.chunk_lengths),
            "contexts": list(self.contexts),
            "batchSizes": list(self.batch_sizes),
            "decodeContexts": list(self.decode_contexts),
            "repeats": self.repeats,
            "decodeSteps": self.decode_steps,
        }


GRIDS = {
    "quick": Grid((1, 4, 16, 64), (0, 64), (1, 4, 16), (8, 64), repeats=2, decode_steps=2),
    "cpu": Grid(
        (1, 2, 4, 8, 16, 32, 64, 128, 512),
        (0, 32, 128, 512),
        (1, 4, 16, 64, 128, 256),
        (8, 64, 256),
    ),
    "cuda": Grid(
        (1, 4, 16, 64, 128, 256, 512, 1024, 2048),
        (0, 256, 1024, 4096),
        (1, 4, 16, 32, 64, 128, 256),
        (64, 512, 2048),
    ),
}
SETUP_CHUNK = 512  # untimed context prefill goes in pieces of at most this many tokens
SETUP_BATCH = 16  # ... for this many requests at once


def measure(real: RealDevice, grid: Grid) -> tuple[list[Submission], list[str]]:
    """Timed samples: every prefill (L, C) ``repeats`` times, every decode (B, c) for some steps.

    Returns the samples and, for each, the grid shape it belongs to (for held-out splits).
    """
    samples: list[Submission] = []
    shapes: list[str] = []
    serial = 0
    for _ in range(grid.repeats):
        for length in grid.chunk_lengths:
            for context in grid.contexts:
                rid = f"cal-p{serial}"
                serial += 1
                _setup(real, [rid], context, extra_prompt=length)
                samples.append(_timed(real, Batch(prefill=(PrefillChunk(rid, length),)), [rid]))
                shapes.append(f"prefill L={length} C={context}")
                _drop(real, [rid])
    for size in grid.batch_sizes:
        for context in grid.decode_contexts:
            rids = [f"cal-d{serial}-{i}" for i in range(size)]
            serial += 1
            _setup(real, rids, context, extra_prompt=0, decode_steps=grid.decode_steps)
            for _ in range(grid.decode_steps):
                samples.append(_timed(real, Batch(decode=tuple(rids)), rids))
                shapes.append(f"decode B={size} c={context}")
            _drop(real, rids)
    return samples, shapes


def _drop(real, rids) -> None:
    for rid in rids:
        real.cache.free(rid)
        real.executor.states.pop(rid, None)
        real.executor.outputs.pop(rid, None)


def _setup(real, rids, context, extra_prompt, decode_steps=0):
    """Add requests holding ``context`` cached positions, untimed; ready to prefill/decode."""
    ex = real.executor
    for rid in rids:
        # a decode setup prefills its whole prompt and gets its first token: the next decode
        # step then sees ``context`` cached positions
        ex.add_request(rid, context + extra_prompt, decode_steps + 2)
    for first in range(0, len(rids), SETUP_BATCH):
        group = rids[first : first + SETUP_BATCH]
        done = 0
        while done < context:
            step = min(SETUP_CHUNK, context - done)
            ex.run(Batch(prefill=tuple(PrefillChunk(rid, step) for rid in group)))
            done += step


def _timed(real, batch, rids) -> Submission:
    context = {rid: real.executor.states[rid].context for rid in rids}
    real.execute(batch, context)
    return real.submissions[-1]
