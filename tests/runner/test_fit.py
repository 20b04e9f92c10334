"""The profile fit recovers known costs from synthetic steps (no timing noise), and the
held-out comparison of the affine and the context-aware model says which one the steps follow."""

from __future__ import annotations

import pytest

TRUTH = dict(
    prefill_ms_per_token=0.03,
    decode_batch_ms=0.4,
    decode_ms_per_seq=0.02,
    overhead_ms=0.7,
    prefill_ms_per_context_token=1e-4,
    decode_ms_per_context_token=2e-4,
)


def _steps(truth):
    """Prefill alone, decode alone and mixes, each measured exactly as ``truth`` charges."""
    from realdevice.fit import Sample
    from servesim import Batch, PrefillChunk
    from servesim.rules import step_terms

    shapes = [((), ((q, s),)) for q in (1, 4, 16, 64) for s in (0, 32, 256)]
    shapes += [((b, c), ()) for b in (1, 3, 8, 20) for c in (5, 100)]
    shapes += [((b, c), ((q, s),)) for b, c in ((2, 50), (6, 300)) for q, s in ((8, 0), (32, 64))]
    samples, labels = [], []
    for decode, chunks in shapes:
        ids = tuple(f"d{i}" for i in range(decode[0])) if decode else ()
        context = dict.fromkeys(ids, decode[1]) if decode else {}
        context |= {f"p{i}": s for i, (_, s) in enumerate(chunks)}
        batch = Batch(
            decode=ids, prefill=[PrefillChunk(f"p{i}", q) for i, (q, _) in enumerate(chunks)]
        )
        samples.append(Sample(step_terms(batch, context), truth.duration_ms(batch, context)))
        labels.append(f"{decode} {chunks}")
    return samples, labels


def test_fit_recovers_a_known_profile(torch_cpu):
    import servesim
    from realdevice.fit import error_summary, fit_profile, held_out, residuals

    truth = servesim.DeviceProfile(**TRUTH)
    samples, labels = _steps(truth)
    fitted = fit_profile(samples, servesim.DeviceProfile())
    for name, value in truth.to_json().items():
        if isinstance(value, float):
            assert fitted.to_json()[name] == pytest.approx(value, rel=1e-6, abs=1e-9), name
    assert error_summary(residuals(fitted, samples))["meanAbsPct"] < 1e-6
    held = held_out(samples, labels, servesim.DeviceProfile())
    assert held["errors"]["context"]["p90AbsPct"] < 1e-6
    # the affine model cannot follow the context costs: it misses steps it never saw
    assert held["errors"]["affine"]["medianAbsPct"] > 1.0
    assert len(held["rows"]) == len(samples)
    assert {r["shape"] for r in held["rows"]} == set(labels)


def test_affine_fit_has_no_context_terms_and_matches_an_affine_device(torch_cpu):
    import servesim
    from realdevice.fit import fit_profile, held_out

    affine = {k: v for k, v in TRUTH.items() if "context" not in k}
    truth = servesim.DeviceProfile(**affine)
    samples, labels = _steps(truth)
    fitted = fit_profile(samples, servesim.DeviceProfile(), "affine")
    assert "prefillMsPerContextToken" not in fitted.to_json()
    assert fitted.decode_ms_per_seq == pytest.approx(truth.decode_ms_per_seq, rel=1e-6)
    held = held_out(samples, labels, servesim.DeviceProfile())
    assert held["errors"]["affine"]["p90AbsPct"] < 1e-6
    assert held["errors"]["context"]["p90AbsPct"] < 1e-6  # zero context costs fit too
