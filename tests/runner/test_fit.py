"""The profile fit recovers known costs from synthetic submissions (no timing noise)."""

from __future__ import annotations

import pytest


def test_fit_recovers_a_known_profile(torch_cpu):
    import servesim
    from realdevice.backend import Submission
    from realdevice.fit import error_summary, fit_profile, held_out, residuals
    from servesim import Batch, PrefillChunk

    truth = servesim.DeviceProfile(
        prefill_ms_per_token=0.03,
        decode_batch_ms=0.4,
        decode_ms_per_seq=0.02,
        overhead_ms=0.7,
        prefill_ms_per_context_token=1e-4,
        decode_ms_per_context_token=2e-4,
    )
    samples, shapes = [], []
    for length in (1, 4, 16, 64):
        for context in (0, 32, 256):
            batch, ctx = Batch(prefill=(PrefillChunk("p", length),)), {"p": context}
            samples.append(_sub(Submission, batch, ctx, truth.duration_ms(batch, ctx)))
            shapes.append(f"p{length}-{context}")
    for size in (1, 3, 8, 20):
        for context in (5, 100):
            ids = tuple(f"d{i}" for i in range(size))
            batch, ctx = Batch(decode=ids), dict.fromkeys(ids, context)
            samples.append(_sub(Submission, batch, ctx, truth.duration_ms(batch, ctx)))
            shapes.append(f"d{size}-{context}")
    fitted = fit_profile(samples, servesim.DeviceProfile())
    for name, value in truth.to_json().items():
        if isinstance(value, float):
            assert fitted.to_json()[name] == pytest.approx(value, rel=1e-6, abs=1e-9), name
    assert error_summary(residuals(fitted, samples))["meanAbsPct"] < 1e-6
    assert held_out(samples, shapes, servesim.DeviceProfile())["p90AbsPct"] < 1e-6


def _sub(cls, batch, context, ms):
    from servesim.rules import prefill_context_pairs

    return cls(
        batch,
        context,
        batch.prefill_tokens,
        prefill_context_pairs(batch, context),
        len(batch.decode),
        sum(context[rid] for rid in batch.decode),
        ms,
        ms,
    )
