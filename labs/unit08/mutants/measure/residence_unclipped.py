"""Mutant: clipped_residence adds whole residences of requests that overlap the window."""


def clipped_residence(requests, start_ms, end_ms):
    return sum(
        r["statusMs"] - r["arrivalMs"]
        for r in requests
        if r["statusMs"] > start_ms and r["arrivalMs"] < end_ms
    )
