"""A command line told something wrong: the error, and the argparse types the flags share."""

from __future__ import annotations

import argparse
import math


class UsageError(Exception):
    """A flag or a file it names is wrong; the message names which, in one line."""


def non_negative(text: str) -> float:
    """A finite number >= 0 (a cost in ms), as argparse's ``type``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value
