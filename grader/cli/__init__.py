"""The ``infralab`` staff command line: ``main.py`` assembles it, ``<group>.py`` holds commands."""

from .main import main

__all__ = ["main"]
