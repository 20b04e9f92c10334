"""Mutant: goodput's window includes a request arriving exactly at its end (``<= end_ms``), but
the window is ``[start, end)``."""


def goodput(requests, slo, start_ms, end_ms, passes=None):
    passes = passes or (lambda request: True)
    window = [r for r in requests if start_ms <= r["arrivalMs"] <= end_ms]
    succeeded = [r for r in window if r["status"] == COMPLETED]  # noqa: F821
    qualifying = sum(1 for r in succeeded if passes(r) and meets_slo(r, slo))  # noqa: F821
    window_s = (end_ms - start_ms) / 1000
    return Goodput(  # noqa: F821
        submitted=len(window),
        succeeded=len(succeeded),
        qualifying=qualifying,
        window_s=window_s,
        submitted_per_s=len(window) / window_s,
        succeeded_per_s=len(succeeded) / window_s,
        goodput_per_s=qualifying / window_s,
        attainment_over_submitted=qualifying / len(window) if window else 0.0,
        attainment_over_succeeded=qualifying / len(succeeded) if succeeded else None,
    )
