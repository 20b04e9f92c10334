"""Errors of trace specs and imports (one line each, naming the field)."""


class SpecError(ValueError):
    """A trace spec or import request that cannot be used; the message names the field."""


class DataMissing(SpecError):
    """An import spec whose CSV is not on this machine (the shared data is not everywhere)."""
