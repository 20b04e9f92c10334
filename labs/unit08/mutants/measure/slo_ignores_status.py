"""Mutant: meets_slo checks the targets only, guarding against a missing TTFT, so a rejected or
cancelled request meets every SLO.
"""


def meets_slo(request, slo):
    ttft, tpot = request["ttftMs"], request["tpotMs"]
    if slo.ttft_ms is not None and ttft is not None and ttft > slo.ttft_ms:
        return False
    return slo.tpot_ms is None or tpot is None or tpot <= slo.tpot_ms
