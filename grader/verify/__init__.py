"""Verification of run files: schema, event-log replay, statistics, comparison with golden runs.

``grader.verify.verify_run`` / ``replay_run`` (in ``run.py``) are the entry points; the replay
itself and the problem kinds live in ``grader.verify.replay`` and ``grader.verify.problems``.
"""

from .run import (
    EPS_MS,
    REQUEST_STATS,
    Problem,
    ProblemKind,
    Replay,
    describe_batch,
    replay_run,
    same_value,
    verify_run,
)

__all__ = [
    "EPS_MS",
    "REQUEST_STATS",
    "Problem",
    "ProblemKind",
    "Replay",
    "describe_batch",
    "replay_run",
    "same_value",
    "verify_run",
]
