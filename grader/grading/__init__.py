"""Grading: a submission's cases run in the sandbox, judged in the trusted parent.

- ``grade``: one submission, case by case (the entry point: ``grade_submission``);
  ``case_runs``: running its cases; ``errors``: the two ways grading itself fails;
- ``cohort``, ``cohort_workers``, ``cohort_reports`` and ``cohort_csv``: a whole class, in
  parallel (the worker pool, the report files), with its scores table;
- ``judge``: judging one case's child result against the golden run, into a ``verdict``;
  ``child_exit``: a child that left no run file; ``scoring``: a checked run against the
  reference; ``judging``: all of it in a child under CPU and memory ceilings;
- ``limits``: a unit's time and size limits and its hidden material;
- ``report`` (with ``leaderboard``): what students and staff see; ``submission``: reading
  what was handed in;
- ``fingerprint``: what a batch report was graded against; ``inprocess``: trusted runs.
"""

from .grade import *  # noqa: F403
from .grade import __all__  # noqa: F401
