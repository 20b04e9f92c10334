"""Mutant: area_under_n counts N(t) from the first event, not from the window's start."""


def area_under_n(requests, start_ms, end_ms):
    changes = sorted(
        [(r["arrivalMs"], 1) for r in requests] + [(r["statusMs"], -1) for r in requests]
    )
    area, in_system, last = 0.0, 0, changes[0][0] if changes else start_ms
    for when, delta in changes:
        clipped = min(when, end_ms)
        area += in_system * (clipped - last)
        last = clipped
        in_system += delta
    return area + in_system * (end_ms - last)
