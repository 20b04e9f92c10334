"""Verification of run files: schema, event-log replay, statistics, comparison with golden runs.

``grader.verify.verify_run`` / ``replay_run`` (in ``run.py``) are the entry points; the replay
itself and the problem kinds live in ``grader.verify.replay`` and ``grader.verify.problems``.
"""

from .run import *  # noqa: F403
from .run import __all__  # noqa: F401
