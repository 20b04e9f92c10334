"""Mutant: diagnose names a cause from a handful of requests (no minimum for a p99)."""

MIN_REQUESTS = 1
