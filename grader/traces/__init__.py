"""Traces: generation from specs, Azure import, checks, metamorphic transforms, mutant reports."""
