"""Mutant: tpot_means counts a one-token request as a TPOT of 0 in the request-weighted mean."""


def tpot_means(requests):
    done = [r for r in requests if r["status"] == "completed" and r["tokenTimesMs"]]
    spans = [
        (r["tokenTimesMs"][-1] - r["tokenTimesMs"][0], len(r["tokenTimesMs"]) - 1) for r in done
    ]
    if not any(gaps for _, gaps in spans):
        return None, None
    per_request = sum(span / gaps if gaps else 0.0 for span, gaps in spans) / len(spans)
    per_token = sum(span for span, _ in spans) / sum(gaps for _, gaps in spans)
    return per_request, per_token
