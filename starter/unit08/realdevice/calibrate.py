"""Measure what submissions cost on the real device, over a grid of step shapes.

A shape is what one step holds: ``decode`` sequences that each have ``decode_context`` positions
cached, and prefill chunks of ``q`` new positions after ``s`` cached ones (the chapter's
``{q_i, s_i}``). The grid crosses chunk lengths with contexts (prefill alone), batch sizes with
contexts (decode alone), and adds mixes of both (a decode batch with one or two chunks). Each
repeat sets a shape up afresh (its cached positions prefilled, untimed), times it, and frees it;
repeats run in rounds over the whole grid, so a slow spell on the machine does not hit every
sample of one shape. Every timed submission goes through ``RealDevice.execute``, so the samples
carry the batch, its context and its cost terms, exactly as a run's submissions do.
"""

from __future__ import annotations

from dataclasses import dataclass

from servesim import Batch, PrefillChunk

from .backend import RealDevice, Submission


@dataclass(frozen=True)
class Shape:
    decode: int = 0  # decoded sequences
    decode_context: int = 0  # cached positions of each
    chunks: tuple[tuple[int, int], ...] = ()  # (new positions q, cached positions s) per chunk

    @property
    def label(self) -> str:
        parts = [f"decode {self.decode}x{self.decode_context}"] if self.decode else []
        parts += [f"prefill {q}@{s}" for q, s in self.chunks]
        return " + ".join(parts)

    def pages(self, page_tokens: int, decode_steps: int) -> int:
        """KV pages the shape holds at its largest (decode members grow by one per step)."""
        pages = lambda tokens: -(-tokens // page_tokens)  # noqa: E731
        held = self.decode * pages(self.decode_context + decode_steps + 1)
        return held + sum(pages(q + s) for q, s in self.chunks)


@dataclass(frozen=True)
class Grid:
    shapes: tuple[Shape, ...]
    repeats: int = 3
    decode_steps: int = 3  # timed steps per setup of a decode-only shape

    def pages_needed(self, page_tokens: int) -> int:
        """KV pages the largest shape holds at once (shapes are freed between setups)."""
        return max(shape.pages(page_tokens, self.decode_steps) for shape in self.shapes)

    def to_json(self) -> dict:
        return {
            "shapes": [shape.label for shape in self.shapes],
            "repeats": self.repeats,
            "decodeSteps": self.decode_steps,
        }


def make_grid(chunk_lengths, contexts, batch_sizes, decode_contexts, mixes=(), **options) -> Grid:
    """Prefill alone (every chunk length after every context), decode alone (every batch size at
    every context), then the ``mixes``."""
    shapes = [Shape(chunks=((q, s),)) for q in chunk_lengths for s in contexts]
    shapes += [Shape(size, context) for size in batch_sizes for context in decode_contexts]
    return Grid((*shapes, *mixes), **options)


def _mixes(sizes, contexts, chunks) -> tuple[Shape, ...]:
    """A decode batch of each size at each context, with each chunk (or pair of chunks)."""
    return tuple(Shape(b, c, chunk) for b in sizes for c in contexts for chunk in chunks)


GRIDS = {
    "quick": make_grid(
        (1, 16, 64),
        (0, 96),
        (1, 8),
        (8, 96),
        _mixes((4,), (64,), (((16, 0),), ((16, 96),))),
        repeats=2,
        decode_steps=2,
    ),
    "cpu": make_grid(
        (1, 8, 32, 128, 256, 512),
        (0, 128, 512, 1024),
        (1, 4, 16, 64, 128),
        (16, 256, 1024),
        _mixes(
            (4, 32),
            (64, 768),
            (((16, 0),), ((16, 768),), ((256, 0),), ((256, 512),), ((64, 0), (64, 512))),
        ),
    ),
    "cuda": make_grid(
        (1, 16, 64, 256, 512, 1024, 2048),
        (0, 512, 2048, 8192),
        (1, 8, 32, 64, 128, 256),
        (64, 1024, 4096),
        _mixes(
            (8, 64),
            (256, 4096),
            (((32, 0),), ((32, 4096),), ((512, 0),), ((512, 2048),), ((256, 0), (256, 4096))),
        ),
    ),
}
SETUP_CHUNK = 512  # untimed context prefill goes in pieces of at most this many tokens
SETUP_BATCH = 16  # ... for this many requests at once


def measure(real: RealDevice, grid: Grid) -> tuple[list[Submission], list[str]]:
    """Timed samples of every shape: ``repeats`` rounds over the grid; a decode-only shape is
    timed for ``decode_steps`` consecutive steps per setup (its contexts grow by one a step,
    which the samples' terms record exactly).

    Returns the samples and, for each, the label of its shape (for held-out splits).
    """
    samples: list[Submission] = []
    labels: list[str] = []
    serial = 0
    for _ in range(grid.repeats):
        for shape in grid.shapes:
            serial += 1
            decode = [f"cal{serial}-d{i}" for i in range(shape.decode)]
            chunks = [(f"cal{serial}-p{i}", q, s) for i, (q, s) in enumerate(shape.chunks)]
            steps = 1 if chunks else grid.decode_steps
            _setup(real, decode, shape.decode_context, extra_prompt=0, decode_steps=steps)
            for rid, q, s in chunks:
                _setup(real, [rid], s, extra_prompt=q)
            batch = Batch(
                decode=tuple(decode), prefill=tuple(PrefillChunk(rid, q) for rid, q, _ in chunks)
            )
            for _ in range(steps):
                samples.append(_timed(real, batch))
                labels.append(shape.label)
            _drop(real, [*decode, *(rid for rid, _, _ in chunks)])
    return samples, labels


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


def _timed(real, batch) -> Submission:
    context = {rid: real.executor.states[rid].context for rid in batch.ids}
    real.execute(batch, context)
    return real.submissions[-1]
