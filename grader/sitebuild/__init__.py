"""Static lesson site: simulator runs, figures and formulas rendered into HTML at build time.

Entry point: :func:`grader.sitebuild.build.build_site` (``infralab site build``).
"""

from .claims import BuildError

__all__ = ["BuildError"]
