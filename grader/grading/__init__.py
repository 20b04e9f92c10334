"""Grading: a submission's cases run in the sandbox, judged in the trusted parent.

- ``grade``: one submission, case by case (the entry point: ``grade_submission``);
- ``cohort`` and ``cohort_csv``: a whole class, in parallel, with its scores table;
- ``verdict``: judging one case's child result against the golden run;
- ``limits``: a unit's time and size limits and its hidden material;
- ``report``: what students and staff see; ``submission``: reading what was handed in;
- ``fingerprint``: what a batch report was graded against; ``inprocess``: trusted runs.
"""

from .grade import *  # noqa: F403
from .grade import __all__  # noqa: F401
