"""Mutant: quality_passes leaves the seed out of the draw, so every replication repeats the same
quality outcomes for the same request ids."""


def quality_passes(request_id, tier, pass_rate, seed):
    digest = hashlib.sha256(f"{tier}/{request_id}".encode()).digest()  # noqa: F821
    return int.from_bytes(digest[:8], "big") / 2**64 < pass_rate
